// JSON numbers that JSON.parse silently changes. Overflow parses as ±Infinity, which the record
// rules reject; underflow (1e-400, or a decimal with 400 zeros before its digit) parses as 0, a
// different number that would be stored as if it had been sent (BAD-INPUTS.md: rejected or stored
// exactly). Such a literal is rewritten as one that overflows, so that the element holding it is
// rejected alone ("number out of range"), as 1e400 is. A zero literal (0e-400) stays zero.

/** A body that may hold an underflowing literal: an exponent of -100 or less, or 300 zeros after a point. */
const MAYBE = /\d[eE]-\d{3}|\.0{300}/;

/** `text` with each number literal outside strings that parses as 0 but is not zero replaced by 1e999 (sign kept). */
export function overflowUnderflows(text: string): string {
  if (!MAYBE.test(text)) return text;
  let out = '';
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character; a quote ends the string.
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) {
      inString = true;
      continue;
    }
    if (c !== 0x2d && (c < 0x30 || c > 0x39)) continue;
    // A number literal: outside strings, JSON has no other token with these characters.
    let end = i;
    while (end < text.length && /[-+0-9.eE]/.test(text[end]!)) end++;
    const literal = text.slice(i, end);
    if (Number(literal) === 0 && /[1-9]/.test(literal.split(/[eE]/)[0]!)) {
      out += text.slice(from, i) + (literal.startsWith('-') ? '-1e999' : '1e999');
      from = end;
    }
    i = end - 1;
  }
  return from === 0 ? text : out + text.slice(from);
}
