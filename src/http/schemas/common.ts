import { Type, type TSchema } from 'typebox';

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ description: 'Stable machine-readable code, e.g. validation_error, forbidden, product_not_found' }),
    detail: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { description: 'RFC 9457 problem details (Content-Type: application/problem+json)' },
);

/**
 * A route schema's mark that its 200 also answers CSV (`Accept: text/csv`), or NDJSON too: the
 * OpenAPI document lists those media types beside JSON (openapi.ts). An `x-` key: Fastify ignores it.
 */
export const EXPORTS_CSV = { 'x-exports': ['text/csv'] };
export const EXPORTS_CSV_NDJSON = { 'x-exports': ['text/csv', 'application/x-ndjson'] };

export const problems = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, { ...Problem, description: `problem+json` }]));

export const Pagination = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});

export const page = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'null at the end' }) });

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });

export const DateTime = Type.String({ format: 'date-time' });
export const NullableDateTime = Type.Union([DateTime, Type.Null()]);
