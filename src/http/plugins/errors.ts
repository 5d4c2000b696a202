import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { AppError, type FieldError } from '../../errors.js';

// One error handler: every non-2xx answer is RFC 9457 problem+json with a `code`.
const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function sendProblem(
  reply: FastifyReply,
  status: number,
  code: string,
  detail: string,
  extra: { errors?: FieldError[] | undefined; headers?: Record<string, string> | undefined; [k: string]: unknown } = {},
): FastifyReply {
  const { headers, errors, ...rest } = extra;
  if (headers) for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  // Details and field names can quote what the client sent: never a lone surrogate in the answer.
  const body: Record<string, unknown> = {
    type: `https://tally.dev/errors/${code}`,
    title: TITLES[status] ?? 'Error',
    status,
    code,
    detail: detail.toWellFormed(),
    ...rest,
  };
  if (errors) body.errors = errors.map((e) => ({ field: e.field.toWellFormed(), message: e.message.toWellFormed() }));
  return reply.code(status).type('application/problem+json').send(JSON.stringify(body));
}

/** Turns Ajv's instancePath ("/product_version") or missingProperty into the field name. */
export function fieldErrors(err: Pick<FastifyError, 'validation' | 'validationContext'>): FieldError[] {
  return (err.validation ?? []).map((v) => {
    const params = v.params as { missingProperty?: string; additionalProperty?: string };
    const base = v.instancePath.replace(/^\//, '').replaceAll('/', '.');
    const leaf = params.missingProperty ?? params.additionalProperty;
    const field = leaf ? (base ? `${base}.${leaf}` : leaf) : base || (err.validationContext ?? 'body');
    return { field, message: v.message ?? 'is invalid' };
  });
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof AppError) {
      if (err.status >= 500) request.log.warn({ err: err.cause ?? err }, err.message);
      return sendProblem(reply, err.status, err.code, err.message, { errors: err.errors, headers: err.headers, ...err.extra });
    }
    if (err.validation) {
      const errors = fieldErrors(err);
      return sendProblem(reply, 400, 'validation_error', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
    }
    // A batch whose body is not whole is invalid_batch, as one cut short inside its JSON (BAD-INPUTS.md, line 1).
    const batch = request.routeOptions.url === '/v1/events';
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendProblem(reply, 413, 'payload_too_large', 'the request body is over 1 MB (1,048,576 bytes)');
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendProblem(reply, 415, 'unsupported_media_type', 'send Content-Type: application/json');
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        if (batch) return sendProblem(reply, 400, 'invalid_batch', 'the body is empty');
        return sendProblem(reply, 400, 'validation_error', 'the body is empty', { errors: [{ field: 'body', message: 'is empty' }] });
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendProblem(reply, 400, batch ? 'invalid_batch' : 'invalid_request', 'Content-Length does not match the body');
    }
    if (err.statusCode === 408 || err.code === 'ECONNRESET' || err.code === 'ERR_STREAM_PREMATURE_CLOSE') {
      return sendProblem(reply, 400, batch ? 'invalid_batch' : 'invalid_request', 'the request body was not received completely');
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return sendProblem(reply, err.statusCode, 'invalid_request', err.message);
    }
    request.log.error({ err }, 'unhandled error');
    return sendProblem(reply, 500, 'internal_error', 'an internal error occurred; it has been logged');
  });

  app.setNotFoundHandler((request, reply) => sendProblem(reply, 404, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`));
}
