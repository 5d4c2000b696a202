// Data scrubbing for the free text of exceptions (message, stack trace, breadcrumbs, environment
// context), before anything is stored, as Sentry's server-side scrubbing does: page URLs carry
// tokens in their query strings, and crash reports quote headers and configuration. What is
// removed becomes "[Filtered]". Every pattern here is linear: tenants' clients send this text.
// docs/api.md ("Exceptions: what is scrubbed") lists the rules.

export const FILTERED = '[Filtered]';

/** Keys whose values are dropped wherever they appear in breadcrumbs or the environment context. */
const SENSITIVE_KEY = /pass(?:word|wd)?|secret|api[-_]?key|access[-_]?key|token|auth|credential|private[-_]?key|session[-_]?id|cookie|csrf|xsrf/i;

// A URL's query string: kept are the `?` and a trailing `:line[:column]` of a stack frame, so
// frames still parse and fingerprints do not move.
// Every open-ended class is bounded, so that no input can make a pattern rescan it quadratically.
const URL_QUERY = /\b([a-z][a-z0-9+.-]{0,31}:\/\/[^\s?#"'<>()]{0,512})\?([^\s#"'<>()]{0,4096})/gi;
const LINE_COLUMN = /(?::\d+){1,2}$/;
const URL_USERINFO = /\b([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/@"'<>()]{1,256}@/gi;

const SECRET_PATTERNS: [RegExp, string][] = [
  [/\b(Bearer|Basic|Token)\s{1,8}[A-Za-z0-9._~+/-]{8,2048}=*/g, `$1 ${FILTERED}`],
  [/\btk_(?:live|test)_[A-Za-z0-9_-]{8,256}/g, FILTERED], // Tally's own API keys
  [/\beyJ[A-Za-z0-9_-]{4,256}\.[A-Za-z0-9_-]{4,2048}\.[A-Za-z0-9_-]{1,2048}/g, FILTERED], // JWTs
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, FILTERED], // AWS access key ids
  [/\bgh[pousr]_[A-Za-z0-9]{30,256}/g, FILTERED], // GitHub tokens
  [/\bxox[abprs]-[A-Za-z0-9-]{10,256}/g, FILTERED], // Slack tokens
  [/\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,256}/g, FILTERED], // Stripe keys
  [/\bAIza[0-9A-Za-z_-]{35}/g, FILTERED], // Google API keys
  [/-----BEGIN [A-Z ]{0,32}PRIVATE KEY-----[^-]{0,8192}-----END [A-Z ]{0,32}PRIVATE KEY-----/g, FILTERED],
  // key=value and key: value in free text (db_password=…, "apiKey": "…"), for sensitive names.
  [
    /(pass(?:word|wd)?|secret|api[-_]?key|access[-_]?key|token|credentials?|private[-_]?key)("?\s{0,8}[=:]\s{0,8})(?!\[Filtered\])("?)[^\s"&,;]{1,2048}/gi,
    `$1$2$3${FILTERED}`,
  ],
];

/** One string with query strings and well-known secrets filtered out. */
export function scrubText(s: string): string {
  if (s.length === 0) return s;
  let out = s.replace(URL_QUERY, (_m, base: string, query: string) => {
    const tail = LINE_COLUMN.exec(query)?.[0] ?? '';
    return query.length === tail.length ? `${base}?${query}` : `${base}?${FILTERED}${tail}`;
  });
  out = out.replace(URL_USERINFO, `$1${FILTERED}@`);
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * Any JSON value with lone surrogates replaced by U+FFFD, in strings and keys: a breadcrumb cut
 * inside an emoji by a client must not cost the crash report. Below `maxDepth` the value is left
 * as it is, for the record rules to refuse. fromEntries defines keys, so `__proto__` stays a key.
 */
export function wellFormedDeep(value: unknown, maxDepth: number): unknown {
  if (typeof value === 'string') return value.toWellFormed();
  if (typeof value !== 'object' || value === null || maxDepth <= 0) return value;
  if (Array.isArray(value)) return value.map((v) => wellFormedDeep(v, maxDepth - 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.toWellFormed(), wellFormedDeep(v, maxDepth - 1)]));
}

/** Any JSON value with its strings scrubbed and the values of sensitive keys filtered. */
export function scrubValue(value: unknown, maxDepth = 64): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (typeof value !== 'object' || value === null || maxDepth <= 0) return value;
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, maxDepth - 1));
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, SENSITIVE_KEY.test(k) && v !== null && typeof v !== 'object' ? FILTERED : scrubValue(v, maxDepth - 1)]),
  );
}
