// UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit counter (method 1), so ids made
// in one process sort in the order they were made, even within a millisecond. Ids are assigned at
// track() and kept on every retry: the server deduplicates by event_id, which makes retries safe.

let lastMs = -1;
let counter = 0;

function randomBytes(n: number): Uint8Array {
  const b = new Uint8Array(n);
  globalThis.crypto.getRandomValues(b);
  return b;
}

export function uuidv7(now: number = Date.now()): string {
  const b = randomBytes(16);
  if (now > lastMs) {
    lastMs = now;
    // Start below the middle so that a burst in one millisecond rarely overflows the counter.
    counter = ((b[6]! << 8) | b[7]!) & 0x7ff;
  } else if (++counter > 0xfff) {
    // Overflow (or a clock that went back): borrow the next millisecond rather than repeat.
    lastMs += 1;
    counter = 0;
  }
  const ms = lastMs;
  b[0] = Math.floor(ms / 2 ** 40) & 0xff;
  b[1] = Math.floor(ms / 2 ** 32) & 0xff;
  b[2] = (ms >>> 24) & 0xff;
  b[3] = (ms >>> 16) & 0xff;
  b[4] = (ms >>> 8) & 0xff;
  b[5] = ms & 0xff;
  b[6] = 0x70 | (counter >>> 8);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  let hex = '';
  for (let i = 0; i < 16; i++) {
    hex += b[i]!.toString(16).padStart(2, '0');
    if (i === 3 || i === 5 || i === 7 || i === 9) hex += '-';
  }
  return hex;
}
