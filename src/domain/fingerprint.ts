// Exception fingerprints: the grouping key for "the same bug". The rules, with worked examples,
// are in docs/fingerprints.md; fingerprints are stored, so any change here regroups history.
import { createHash } from 'node:crypto';

/** Hex characters kept of the SHA-256 digest: 128 bits, far past any accidental collision. */
export const FINGERPRINT_LENGTH = 32;
/** In-app frames that identify a bug; deeper frames say more about the caller than the bug. */
export const DEFAULT_MAX_FRAMES = 5;
/** Hashed with the parts, so a deliberate change of the rules can be told from an accident. */
const RULES_VERSION = 1;
// No real frame is this long; skipping such lines also bounds the parsers' work.
const MAX_LINE = 2048;
const MAX_MESSAGE = 1000;

// The client libraries' own frames (Tally's and Beacon's JavaScript, .NET and C++ clients) are
// never application code, as Sentry treats its SDKs' frames: an upgrade of the client must not
// regroup every exception. The C++ clients take the backtrace inside their own handler, so their
// frames lead the trace and are dropped before anything else.
const CLIENT_NATIVE_MODULE = /libtally|libbeacon/i;
const CLIENT_NATIVE_SYMBOL = /^(?:tally|beacon)::/;
const CLIENT_NATIVE_MANGLED = /^_ZN[rVKRO]*(?:5tally|6beacon)/;
const CLIENT_DOTNET = /^(?:Tally\.Client|Beacon\.(?:Sdk|Client|Analytics|Telemetry|Tracking))\./;
const CLIENT_SCRIPT = /(?:^|[\\/])(?:@tally[\\/]client|@beacon[\\/]|tally-client(?:\.min)?\.m?js|beacon(?:[-_.]sdk)?(?:\.min)?\.m?js)/i;

// rank 0: application code; 1: application code known only by an address;
// 2: runtime, framework, third-party or client-library code. Only the best rank present is used.
type Rank = 0 | 1 | 2;
type Frame = { fn: string; module: string; rank: Rank; capture?: boolean };

export function fingerprint(input: { exceptionType: string; message?: string | null; stackTrace?: string | null }): string {
  const type = input.exceptionType.trim();
  const frames = input.stackTrace ? topFrames(input.stackTrace) : [];
  const basis = frames.length > 0 ? { v: RULES_VERSION, type, frames } : { v: RULES_VERSION, type, message: normaliseMessage(input.message ?? '') };
  // JSON keeps the parts apart: no type, frame or message can be mistaken for another.
  return createHash('sha256').update(JSON.stringify(basis)).digest('hex').slice(0, FINGERPRINT_LENGTH);
}

/** The normalised frames a fingerprint is made of, innermost first: "fn (module)" or "Ns.Type.Method". */
export function topFrames(stackTrace: string, max = DEFAULT_MAX_FRAMES): string[] {
  const frames: Frame[] = [];
  for (const raw of stackTrace.split(/\r\n|\r|\n/)) {
    const line = raw.trim();
    if (line.length === 0 || line.length > MAX_LINE) continue;
    const frame = parseDotNet(line) ?? parseV8(line) ?? parseGecko(line) ?? parseGlibc(line);
    if (frame) frames.push(frame);
  }
  // The C++ client takes the backtrace inside its own handler: its frames lead and say nothing of the bug.
  while (frames[0]?.capture) frames.shift();
  if (frames.length === 0 || max <= 0) return [];
  const best = frames.reduce<Rank>((r, f) => (f.rank < r ? f.rank : r), 2);
  return frames
    .filter((f) => f.rank === best)
    .slice(0, max)
    .map((f) => (f.module ? `${f.fn} (${f.module})` : f.fn));
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** Message as grouped: UUIDs, hex and any word holding a digit become "#"; words and quotes stay. */
export function normaliseMessage(message: string): string {
  return message
    .slice(0, MAX_MESSAGE)
    .replace(UUID, '#')
    .replace(/\w+/g, (w) => (/\d/.test(w) || /^[0-9a-f]{8,}$/i.test(w) ? '#' : w))
    .replace(/\s+/g, ' ')
    .trim();
}

// Line numbers, lambda ordinals, generic arities and chunk ids all change from build to build.
const stripDigits = (name: string): string => name.replace(/\d+/g, '');

// ---- .NET: "at Ns.Type.Method(Type arg) in C:\src\File.cs:line 42", or without " in …"; Mono ----

function parseDotNet(line: string): Frame | null {
  if (!line.startsWith('at ')) return null;
  const open = line.indexOf('(');
  const close = line.indexOf(')', open);
  if (open < 0 || close < 0) return null;
  const rest = line.slice(close + 1).trim();
  // Mono (Unity, Xamarin) puts a space before "(" and an IL offset after ")": "[0x0001b]", "<0x…>".
  const mono = /^[[<]0x/.test(rest);
  const name = mono ? line.slice(3, open).trimEnd() : line.slice(3, open);
  // V8 puts a space before "(" and URLs hold "/" or ":": neither is a .NET method name.
  if (!/^[^\s/:]+\.[^\s/:]+$/.test(name)) return null;
  if (!mono && rest !== '' && !rest.startsWith('in ')) return null;
  // Argument lists and files are dropped: parameter renames and build paths are not new bugs.
  const fn = name
    .replace(/\[[^\]]*\]/g, '') // generic parameters: First[TSource]
    .replace(/\.<([^>]+)>d__\d*\.MoveNext$/, '.$1'); // .NET Framework's async state machine
  return { fn: stripDigits(fn), module: '', rank: /^(System|Microsoft)\./.test(fn) || CLIENT_DOTNET.test(fn) ? 2 : 0 };
}

// ---- V8 (Node, Chrome, Edge): "at fn (url:line:col)", "at url:line:col", "at eval (eval at …)" ----

const V8_LOCATION = /:\d+(?::\d+)?$|^<anonymous>$|^native$|^index \d+$|^eval at /;

function parseV8(line: string): Frame | null {
  if (!line.startsWith('at ')) return null;
  const body = line
    .slice(3)
    .trim()
    .replace(/^async /, ''); // resumed after an await: the same function
  let name = '';
  let location = body;
  if (body.endsWith(')')) {
    const open = body.indexOf(' (');
    if (open < 0) return null;
    name = body.slice(0, open);
    location = body.slice(open + 2, -1);
  }
  if (!V8_LOCATION.test(location)) return null;
  name = name.replace(/ \[as [^\]]*\]$/, ''); // the alias depends on how the function was reached
  return scriptFrame(name, location);
}

// ---- Firefox and Safari: "fn@url:line:col", "@url:line:col", "async*fn@…", "fn@[native code]" ----

const GECKO = /^(?:[^@*]*\*)?([^@\s]*|global code|eval code|module code)@(.+)$/;

function parseGecko(line: string): Frame | null {
  const m = GECKO.exec(line);
  if (!m) return null;
  let location = m[2]!;
  if (location !== '[native code]' && !/:\d+(?::\d+)?$/.test(location)) return null;
  const evalAt = location.indexOf(' line '); // "file.js line 2 > eval:1:5": the file that called eval
  if (evalAt > 0 && location.includes(' > ')) location = location.slice(0, evalAt);
  return scriptFrame(m[1]!, location);
}

const BUILTIN = /^(?:<anonymous>|native|\[native code\]|index \d+)$/;
const NOT_APP = /^(?:node:|internal\/|(?:chrome|moz|safari|safari-web)-extension:|resource:|chrome:)|[\\/]node_modules[\\/]/;

function scriptFrame(name: string, location: string): Frame {
  const fn = stripDigits(name) || '<anonymous>';
  let loc = location;
  if (loc.startsWith('eval at ')) loc = /\(([^()]+)\)/.exec(loc)?.[1] ?? '<eval>';
  if (BUILTIN.test(loc)) return { fn, module: '', rank: 2 };
  const path = loc
    .replace(/:\d+(?::\d+)?$/, '') // line and column
    .replace(/[?#].*$/, '') // query string and hash: cache busters, page state
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, ''); // scheme and host: staging and production alike
  return { fn, module: scriptModule(path), rank: NOT_APP.test(loc) || CLIENT_SCRIPT.test(path) ? 2 : 0 };
}

/** Basename without content hashes or chunk ids: main.3f2a1b9c.js, index-BxKqfQaz.js → main.js, index.js. */
function scriptModule(path: string): string {
  const base = path.split(/[\\/]/).pop()!.replace(UUID, '');
  const tokens = base.split(/([.-])/); // separators at the odd indexes
  let out = '';
  for (let i = 0; i < tokens.length; i += 2) {
    const token = tokens[i]!;
    if (token === '' || isHashLike(token, i === 0)) continue;
    out += (out ? (tokens[i - 1] ?? '') : '') + token;
  }
  return out || '/';
}

function isHashLike(token: string, first: boolean): boolean {
  if (/^\d+$/.test(token)) return true;
  if (/^\w{6,}$/.test(token) && /\d/.test(token)) return true;
  if (/^[0-9a-f]{8,}$/i.test(token)) return true;
  // Rollup and Vite: eight base64url characters, often without a digit ("index-BxKqfQaz.js").
  return !first && /^\w{8}$/.test(token) && /[a-z]/.test(token) && /[A-Z]/.test(token);
}

// ---- glibc backtrace_symbols (C++): "module(symbol+0xoff) [0xaddr]", "module(+0xoff) [0xaddr]" ----

const SYSTEM_LIB = /^(?:lib(?:c|m|dl|rt|pthread|stdc\+\+|c\+\+|c\+\+abi|gcc_s)\.so|ld-linux|linux-vdso)/;

function parseGlibc(line: string): Frame | null {
  const addr = /\s*\[0x[0-9a-f]+\]$/i.exec(line);
  if (!addr) return null;
  const head = line.slice(0, addr.index);
  const open = head.indexOf('(');
  if (open <= 0 || !head.endsWith(')')) return null;
  // Basename without the version suffix: /usr/lib/libfoo.so.1.2 → libfoo.so, ./orderd → orderd.
  const module = head
    .slice(0, open)
    .split('/')
    .pop()!
    .replace(/\.so(?:\.\d+)+$/, '.so');
  const inner = head.slice(open + 1, -1);
  const plus = inner.lastIndexOf('+');
  const symbol = (plus >= 0 && /^\+0x[0-9a-f]+$/i.test(inner.slice(plus)) ? inner.slice(0, plus) : inner).trim();
  // Clone suffixes (.cold, .isra.0, .constprop.0) depend on the optimiser, not on the code.
  const bare = symbol.replace(/\..*$/, '');
  const name = bare ? (demangle(bare) ?? bare) : '';
  const capture = CLIENT_NATIVE_MODULE.test(module) || CLIENT_NATIVE_SYMBOL.test(name) || CLIENT_NATIVE_MANGLED.test(bare);
  const other = capture || SYSTEM_LIB.test(module);
  if (!name) return { fn: '?', module, rank: other ? 2 : 1, capture };
  return { fn: stripDigits(name), module, rank: other ? 2 : 0, capture };
}

/**
 * Demangles the plain Itanium names (a::b::c, constructors, destructors) and gives up, returning
 * null, on anything else (templates, substitutions, lambdas): the mangled name is stable too.
 */
function demangle(symbol: string): string | null {
  if (!symbol.startsWith('_Z')) return null;
  let i = 2;
  const parts: string[] = [];
  const readName = (): boolean => {
    const digits = /^\d+/.exec(symbol.slice(i))?.[0];
    if (!digits) return false;
    const start = i + digits.length;
    const end = start + Number(digits);
    if (end > symbol.length) return false;
    parts.push(symbol.slice(start, end));
    i = end;
    return true;
  };
  const nested = symbol[i] === 'N';
  if (nested) i++;
  while (nested && /[rVKRO]/.test(symbol[i] ?? '')) i++; // cv- and ref-qualifiers of methods
  if (symbol.startsWith('St', i)) {
    parts.push('std');
    i += 2;
  }
  if (!nested) return readName() ? parts.join('::') : null;
  while (i < symbol.length && symbol[i] !== 'E') {
    const c = symbol[i];
    const last = parts.at(-1);
    if ((c === 'C' || c === 'D') && last && /\d/.test(symbol[i + 1] ?? '')) {
      parts.push(c === 'C' ? last : `~${last}`);
      i += 2;
    } else if (!readName()) {
      return null;
    }
  }
  return symbol[i] === 'E' && parts.length > 0 ? parts.join('::') : null;
}
