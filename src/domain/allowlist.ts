// Allowlist rules: (category, name) pairs where `*` matches any run of characters, so `*` alone
// allows everything in that position and `checkout_*` a family of names. Matching is exact
// otherwise (case-sensitive, like the event fields themselves).
export interface AllowRule {
  category: string;
  name: string;
}

const cache = new Map<string, RegExp | string>();

function matcher(pattern: string): RegExp | string {
  let m = cache.get(pattern);
  if (m === undefined) {
    m = pattern.includes('*') ? new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's') : pattern;
    if (cache.size > 10_000) cache.clear();
    cache.set(pattern, m);
  }
  return m;
}

function matches(pattern: string, value: string): boolean {
  const m = matcher(pattern);
  return typeof m === 'string' ? m === value : m.test(value);
}

export function isAllowed(rules: readonly AllowRule[], category: string, name: string): boolean {
  return rules.some((r) => matches(r.category, category) && matches(r.name, name));
}
