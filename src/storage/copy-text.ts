import { Readable } from 'node:stream';
import pg from 'pg';

// PostgreSQL's COPY … TO STDOUT (FORMAT binary) of a one-column text query, as the bytes of its
// values back to back: the stream behind Db.copyText (postgres.ts). The values come out as the
// server holds them (binary format escapes nothing), from Buffers the driver never turns into
// strings, so an export of any size passes through the heap as a few 64 kB chunks at a time.

/**
 * A parameter as a SQL literal: COPY takes no parameters. What pg sends for each parameter is
 * text of unspecified type, and a quoted literal is the same to the server's parser (its type is
 * resolved from where it stands); arrays are written as pg writes them.
 */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  return pg.escapeLiteral(text(v));
}
function text(v: unknown): string {
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return `{${v.map((x) => (x === null || x === undefined ? 'NULL' : `"${text(x).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'object' && !Buffer.isBuffer(v)) return JSON.stringify(v);
  throw new TypeError(`copyText: no literal for a ${typeof v} parameter`);
}

/** sql with $1…$n replaced by their values as literals (the sql's own text holds no `$`). */
export function inlineParams(sql: string, params: readonly unknown[] = []): string {
  return sql.replace(/\$(\d+)/g, (_, i: string) => {
    if (Number(i) < 1 || Number(i) > params.length) throw new RangeError(`copyText: no value for $${i}`);
    return literal(params[Number(i) - 1]);
  });
}

// The binary COPY format: an 11-byte signature, 4 bytes of flags and a 4-byte length of a header
// extension; then per row a 16-bit field count (1 here), a 32-bit length (-1 for NULL) and the
// bytes; a field count of -1 ends it.
const SIGNATURE_AND_FLAGS = 15;

export interface CopyTextOptions {
  /** Sent before the first value (the CSV header). */
  prefix?: Buffer | undefined;
  /**
   * How long the stream may wait for the server while its reader wants more, before `onIdle`: the
   * statement timeout of a statement that may run for as long as its reader reads.
   */
  idleMs: number;
  onIdle: () => void;
}

/**
 * The values of a binary COPY stream (pg-copy-streams' `to`), back to back. `ready` resolves once
 * the first bytes (or the end) have come, and rejects if the COPY fails before them, so that a
 * failure there is still an error answer. Reads from the server only while its own reader wants
 * more (backpressure reaches PostgreSQL through the socket).
 */
export class CopyText extends Readable {
  readonly ready: Promise<void>;
  private settle!: (err?: Error) => void;
  private wanted = true;
  private timer: NodeJS.Timeout | undefined;
  private skip = SIGNATURE_AND_FLAGS;
  /** The bytes of a field count, field length or header-extension length read so far. */
  private head = Buffer.alloc(6);
  private headN = 0;
  /** What the next head is: the header extension's length (4 bytes), or a row's count and length (6, or 2 at the end). */
  private expecting: 'extension' | 'row' = 'extension';
  /** Bytes of the current value still to copy. */
  private left = 0;
  private ended = false;
  private prefix: Buffer | undefined;

  constructor(
    private readonly source: Readable,
    private readonly opts: CopyTextOptions,
  ) {
    super({ highWaterMark: 64 * 1024 });
    this.prefix = opts.prefix;
    const ready = new Promise<void>((resolve, reject) => {
      this.settle = (err) => (err ? reject(err) : resolve());
    });
    ready.catch(() => {});
    this.ready = ready;
    // A failure before the reader has the stream goes to `ready`; after, to the reader's own listeners as well.
    this.on('error', () => {});
    // The source keeps this listener for good: the driver may report an error after we stopped reading.
    source.on('error', (err) => this.destroy(err));
    source.on('readable', () => this.pump());
    source.on('end', () => {
      this.disarm();
      if (!this.ended) this.destroy(new Error('COPY ended before its trailer'));
      else {
        if (this.prefix) this.push(this.prefix);
        this.push(null);
        this.settle();
      }
    });
    this.pump();
  }

  override _read(): void {
    this.wanted = true;
    this.pump();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.disarm();
    this.settle(err ?? new Error('the export was closed before its first row'));
    this.source.destroy();
    cb(err);
  }

  private pump(): void {
    if (this.destroyed) return;
    let chunk: Buffer | null;
    while (this.wanted && (chunk = this.source.read() as Buffer | null) !== null) {
      let out: Buffer;
      try {
        out = this.decode(chunk);
      } catch (err) {
        this.destroy(err as Error);
        return;
      }
      if (out.length === 0) continue;
      if (this.prefix) {
        this.push(this.prefix);
        this.prefix = undefined;
      }
      this.wanted = this.push(out);
      this.settle();
    }
    if (this.wanted && !this.ended) this.arm();
    else this.disarm();
  }

  private arm(): void {
    this.disarm();
    this.timer = setTimeout(() => this.opts.onIdle(), this.opts.idleMs);
  }
  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The value bytes of one chunk of the COPY stream, moved to its start in place (they are never
   * ahead of where they were read from, and the chunk is ours: pg-copy-streams hands over each
   * chunk once), so that no other buffer is allocated.
   */
  private decode(chunk: Buffer): Buffer {
    const out = chunk;
    let o = 0;
    let i = 0;
    while (i < chunk.length && !this.ended) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - i);
        this.skip -= n;
        i += n;
      } else if (this.left > 0) {
        const n = Math.min(this.left, chunk.length - i);
        if (o !== i) chunk.copy(out, o, i, i + n);
        o += n;
        i += n;
        this.left -= n;
      } else {
        const need = this.expecting === 'extension' ? 4 : this.headN >= 2 && this.head.readInt16BE(0) === -1 ? 2 : 6;
        const n = Math.min(need - this.headN, chunk.length - i);
        chunk.copy(this.head, this.headN, i, i + n);
        this.headN += n;
        i += n;
        if (this.headN === 2 && this.expecting === 'row' && this.head.readInt16BE(0) === -1) {
          this.ended = true;
        } else if (this.headN === need) {
          this.headN = 0;
          if (this.expecting === 'extension') {
            this.skip = this.head.readUInt32BE(0);
            this.expecting = 'row';
          } else {
            if (this.head.readInt16BE(0) !== 1) throw new Error(`COPY: a row of ${this.head.readInt16BE(0)} fields, not 1`);
            this.left = Math.max(0, this.head.readInt32BE(2));
          }
        }
      }
    }
    return out.subarray(0, o);
  }
}
