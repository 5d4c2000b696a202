import { Type } from 'typebox';
import { DateTime, NullableDateTime } from './common.js';

export const Product = Type.Object({
  id: Type.String({ format: 'uuid' }),
  slug: Type.String(),
  name: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('deleting')]),
  strict_versions_enabled: Type.Boolean(),
  created_at: DateTime,
  updated_at: DateTime,
});

export const CreateProduct = Type.Object({
  slug: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9][A-Za-z0-9._~-]*$', description: 'what events send as product' }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
});

export const PatchProduct = Type.Object({
  strict_versions_enabled: Type.Optional(Type.Boolean()),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
});

export const Version = Type.Object({
  id: Type.String({ format: 'uuid' }),
  product: Type.String({ description: 'product slug' }),
  product_version: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('archived')]),
  release_date: Type.Union([Type.String({ format: 'date' }), Type.Null()]),
  source: Type.Union([Type.Literal('registered'), Type.Literal('auto')]),
  created_at: DateTime,
  first_seen: NullableDateTime,
  last_seen: NullableDateTime,
});
