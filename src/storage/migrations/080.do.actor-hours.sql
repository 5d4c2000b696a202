-- The UTC hours an actor was active on a day (docs/read-model.md): bit h set when it had an event
-- in hour h (0–23) of that UTC day; 0 on a row folded from exceptions only. With the day it gives
-- the actor's active local days exactly in any zone whose offset is a whole number of hours,
-- daylight saving included (each UTC hour has its own offset), so reports need not fall back to raw
-- events for a time zone. Compaction merges rows with bit_or; readers bit_or too.
ALTER TABLE rm_actor_days ADD COLUMN hours int NOT NULL DEFAULT 0;

-- Rows folded before this migration: their hours from the raw events they were folded from.
UPDATE rm_actor_days d SET hours = h.hours
  FROM (SELECT e.tenant_id, (e.occurred_at AT TIME ZONE 'UTC')::date AS day, coalesce(l.identified_actor_id, e.actor_id) AS actor_id, e.product_id,
               coalesce(e.account_id, '') AS account_id, coalesce(e.license_id, '') AS license_id,
               bit_or(1 << extract(hour FROM e.occurred_at AT TIME ZONE 'UTC')::int) AS hours
          FROM events e LEFT JOIN actor_links l ON l.tenant_id = e.tenant_id AND l.anonymous_actor_id = e.actor_id
         GROUP BY 1, 2, 3, 4, 5, 6) h
 WHERE d.events > 0 AND d.tenant_id = h.tenant_id AND d.day = h.day AND d.actor_id = h.actor_id AND d.product_id = h.product_id
   AND d.account_id = h.account_id AND d.license_id = h.license_id;
