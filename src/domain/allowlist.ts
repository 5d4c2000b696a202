// Allowlist rules: (category, name) pairs where `*` matches any run of characters, so `*` alone
// allows everything in that position and `checkout_*` a family of names. Matching is exact
// otherwise (case-sensitive, like the event fields themselves).
//
// A tenant writes these patterns and every batch is judged against them on the main thread, so
// matching must cost time linear in the name whatever the pattern: no regular expression (a
// pattern such as `*a*a*a*b` backtracks exponentially in one), and caps on what a list may hold.
export interface AllowRule {
  category: string;
  name: string;
}

export const ALLOWLIST_LIMITS = {
  /** Wildcards in one pattern. */
  wildcards: 8,
  /** Rules of one product with a wildcard in either position; exact rules are a hash look-up and are not capped here. */
  wildcardRules: 50,
} as const;

const hasWildcard = (r: AllowRule) => r.category.includes('*') || r.name.includes('*');

/**
 * Whether a `*` glob matches the whole value. The literal pieces between the stars are found left
 * to right, each at its first place after the previous one; for patterns whose only wildcard is
 * `*`, the leftmost placement is a match whenever any placement is. indexOf per piece: linear.
 */
export function globMatch(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value;
  const pieces = pattern.split('*');
  const head = pieces[0]!;
  const tail = pieces[pieces.length - 1]!;
  if (value.length < head.length + tail.length || !value.startsWith(head) || !value.endsWith(tail)) return false;
  const end = value.length - tail.length;
  let at = head.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i]!;
    if (piece === '') continue;
    const found = value.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

/** A product's rules made ready for a batch: exact pairs in a set, the few wildcard rules in a list. */
export interface CompiledAllowlist {
  exact: Set<string>;
  globs: AllowRule[];
}

const pairKey = (category: string, name: string) => `${category}\u0000${name}`;

export function compileAllowlist(rules: readonly AllowRule[]): CompiledAllowlist {
  const exact = new Set<string>();
  const globs: AllowRule[] = [];
  for (const r of rules) {
    if (hasWildcard(r)) globs.push(r);
    else exact.add(pairKey(r.category, r.name));
  }
  return { exact, globs };
}

export function isAllowed(list: CompiledAllowlist, category: string, name: string): boolean {
  if (list.exact.has(pairKey(category, name))) return true;
  return list.globs.some((r) => globMatch(r.category, category) && globMatch(r.name, name));
}

/** What is wrong with a list a tenant wants to store, if anything: `field` names the offending rule. */
export function allowlistProblem(rules: readonly AllowRule[], field: string): { field: string; message: string } | undefined {
  let wildcardRules = 0;
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i]!;
    for (const part of ['category', 'name'] as const) {
      const stars = r[part].split('*').length - 1;
      if (stars > ALLOWLIST_LIMITS.wildcards)
        return { field: `${field}[${i}].${part}`, message: `at most ${ALLOWLIST_LIMITS.wildcards} wildcards (*) in one pattern` };
    }
    if (hasWildcard(r) && ++wildcardRules > ALLOWLIST_LIMITS.wildcardRules) {
      return { field: `${field}[${i}]`, message: `at most ${ALLOWLIST_LIMITS.wildcardRules} rules with a wildcard per product; list the exact pairs instead` };
    }
  }
  return undefined;
}
