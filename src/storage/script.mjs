// @ts-check
// A script: statements run in order inside one transaction, each one's parameters taken from the
// answers of the statements before it where needed. It is how a background job's step goes to a
// store as one piece of work: on the embedded store one message to its worker thread, run there
// from BEGIN to COMMIT with no round trip to the main thread between two statements (each such
// round trip waited for the main thread's event loop, busy with requests: docs/embedded-store.md);
// on PostgreSQL the same statements on the job's connection. Plain JavaScript (type-checked through
// JSDoc) because the worker thread loads it too (storage/embedded/worker.mjs).

/**
 * A value from an earlier statement of the same script: `column` of the first row of the statement
 * named `statement`.
 * @typedef {{ $ref: string }} Ref
 */

/**
 * One statement of a script. `params` may hold Refs (`{ $ref: 'name.column' }`). With `when`
 * (`'name.column'`), it runs only if that value is true; otherwise it is skipped. A named
 * statement's rows are returned under its name.
 * @typedef {{ sql: string, params?: unknown[], name?: string, when?: string }} ScriptStatement
 */

/** @typedef {(sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>} RunQuery */

/**
 * Runs the statements through `query`, in order, in the caller's transaction; resolves to the rows
 * of the named ones (a skipped one has none). A Ref to a statement not run, or to a column its
 * first row lacks, is an error, never a silent NULL.
 * @param {RunQuery} query
 * @param {ScriptStatement[]} statements
 * @returns {Promise<Record<string, Record<string, unknown>[]>>}
 */
export async function runScript(query, statements) {
  /** @type {Record<string, Record<string, unknown>[]>} */
  const named = {};
  /** @param {string} ref */
  const value = (ref) => {
    const dot = ref.indexOf('.');
    const rows = named[ref.slice(0, dot)];
    const row = rows?.[0];
    const column = ref.slice(dot + 1);
    if (!row || !(column in row)) throw new Error(`script: ${ref} is not the answer of an earlier statement`);
    return row[column];
  };
  for (const s of statements) {
    if (s.when !== undefined && !(s.when.slice(0, s.when.indexOf('.')) in named && value(s.when) === true)) continue;
    const params = (s.params ?? []).map((p) => (isRef(p) ? value(p.$ref) : p));
    const rows = await query(s.sql, params);
    if (s.name !== undefined) named[s.name] = rows;
  }
  return named;
}

/**
 * @param {unknown} p
 * @returns {p is Ref}
 */
function isRef(p) {
  return (
    typeof p === 'object' &&
    p !== null &&
    !Array.isArray(p) &&
    !(p instanceof Date) &&
    Object.keys(p).length === 1 &&
    typeof (/** @type {Ref} */ (p).$ref) === 'string'
  );
}
