import semver from 'semver';

// The version selector `latest` (CONTRACT.md): the highest version by semantic-version precedence
// where the strings parse, release_date breaking ties, then created_at. Strings that do not parse
// as semver (loosely: "v1.2", "1.2.3.4" do not; "v1.2.3" does) rank below every one that does,
// and among themselves are ordered by release_date, then created_at, then numerically.
export interface VersionCandidate {
  product_version: string;
  release_date: string | null;
  created_at: string;
}

function parse(v: string): semver.SemVer | null {
  return semver.parse(v, { loose: true });
}

/** Negative when a is older than b, positive when newer. */
export function compareVersions(a: VersionCandidate, b: VersionCandidate): number {
  const pa = parse(a.product_version);
  const pb = parse(b.product_version);
  if (pa && !pb) return 1;
  if (!pa && pb) return -1;
  if (pa && pb) {
    const c = semver.compare(pa, pb);
    if (c !== 0) return c;
  }
  // A release date beats none; a later one beats an earlier one.
  const ra = a.release_date ?? '';
  const rb = b.release_date ?? '';
  if (ra !== rb) return ra < rb ? -1 : 1;
  const created = Date.parse(a.created_at) - Date.parse(b.created_at);
  // Registered at the same instant (one batch auto-registers several): the version strings with
  // their numbers compared as numbers ("2.0" after "1.0", "1.10" after "1.9").
  return created !== 0 ? created : NUMERIC.compare(a.product_version, b.product_version);
}

const NUMERIC = new Intl.Collator('en', { numeric: true });

export function pickLatest<T extends VersionCandidate>(versions: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const v of versions) if (!best || compareVersions(v, best) > 0) best = v;
  return best;
}
