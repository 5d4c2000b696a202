import { Type } from 'typebox';
import { DateTime, NullableDateTime } from './common.js';

export const ActorParams = Type.Object({ actorId: Type.String({ minLength: 1, maxLength: 512 }) });

export const Erasure = Type.Object({
  id: Type.String({ format: 'uuid' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('done'), Type.Literal('failed')]),
  status_url: Type.String({ description: 'where to follow the erasure: GET it until status is done' }),
  requested_at: DateTime,
  completed_at: NullableDateTime,
  erased: Type.Union([Type.Record(Type.String(), Type.Integer()), Type.Null()], { description: 'rows removed (derived counts: rows lowered), per table' }),
  error: Type.Union([Type.String(), Type.Null()]),
});
