import { api, ok, type Schema } from './api.ts';
import { useLoad } from './ui.tsx';

export type Region = Pick<Schema<'Region'>, 'region' | 'displayName' | 'city' | 'country'>;

/**
 * A region as people know it: its display name (an admin's, else the panel location's description),
 * then the city and country when set: "Frankfurt 1 — Frankfurt, DE". `withTag` adds the tag after the
 * name where it is the value chosen (the deploy form); a name that is only the tag is shown once.
 */
export function regionLabel(r: Region, withTag = false): string {
  const place = [r.city, r.country].filter(Boolean).join(', ');
  const name = r.displayName === r.region || !withTag ? r.displayName : `${r.displayName} (${r.region})`;
  return place ? `${name} — ${place}` : name;
}

const FRESH_MS = 60_000;
let catalogue: { at: number; regions: Promise<Region[]> } | undefined;

/** GET /v1/regions, shared by every page that names a region for a minute; a failure is asked again next time. */
export function loadRegions(): Promise<Region[]> {
  if (!catalogue || Date.now() - catalogue.at > FRESH_MS) {
    const regions = ok(api().GET('/v1/regions')).then((r) => r.data);
    regions.catch(() => {
      if (catalogue?.regions === regions) catalogue = undefined;
    });
    catalogue = { at: Date.now(), regions };
  }
  return catalogue.regions;
}

/**
 * Names region tags from the catalogue: the label above, or the tag itself while the catalogue
 * loads, when it cannot be read, or when it has no entry for the tag (a region with no enabled panel).
 */
export function useRegionNames(): (tag: string) => string {
  const { data } = useLoad(() => loadRegions().catch(() => [] as Region[]), []);
  return (tag) => {
    const entry = data?.find((r) => r.region === tag);
    return entry ? regionLabel(entry) : tag;
  };
}

/** A server's region, by name (the tag on hover); a dash when it has none. */
export function RegionName(props: { tag: string | null | undefined }) {
  const name = useRegionNames();
  if (!props.tag) return <span class="muted">—</span>;
  return <span title={`Region tag: ${props.tag}`}>{name(props.tag)}</span>;
}
