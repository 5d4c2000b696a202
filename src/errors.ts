// The one error type: an HTTP status and the code the spec or contract names.
// The error handler in src/http/plugins/errors.ts turns it into problem+json.
export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors: FieldError[] | undefined;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    status: number,
    code: string,
    detail: string,
    opts: { errors?: FieldError[]; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.status = status;
    this.code = code;
    this.errors = opts.errors;
    this.extra = opts.extra;
    this.headers = opts.headers;
  }
}

export const unauthorized = (detail = 'missing or invalid API key') => new AppError(401, 'unauthorized', detail);
export const forbidden = (permission: string) => new AppError(403, 'forbidden', `this API key lacks the ${permission} permission`);
export const notFound = (code: string, what: string) => new AppError(404, code, `${what} not found`);
export const validationError = (errors: FieldError[], status = 400) =>
  new AppError(status, 'validation_error', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });

/** The store could not be reached or did not answer in time: the client should retry. */
export class StoreUnavailableError extends AppError {
  constructor(cause?: unknown) {
    super(503, 'store_unavailable', 'the data store is unavailable; retry later', { headers: { 'retry-after': '5' } });
    this.cause = cause;
  }
}

/**
 * A statement the store cancelled at its statement timeout. Still a 503 where nothing says
 * otherwise (a write that slow means a store in trouble: the client retries); the read side's
 * routes answer it as a 422 query_too_large (src/app.ts, CONTRACT.md).
 */
export class StatementTimeoutError extends StoreUnavailableError {}

/** CONTRACT.md: a read query past its time budget is a 422 naming what to narrow, never a 503. */
export function queryTooLarge(what = 'narrow the range, or add a product, name or account filter'): AppError {
  return new AppError(422, 'query_too_large', `query too large for its time budget: ${what}`, { errors: [{ field: 'range', message: what }] });
}
