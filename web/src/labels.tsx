import { href } from './router.ts';

/**
 * Labels (`{ env: 'prod' }`) as chips, and as the text a person types (`env=prod, team=blue`). The
 * API checks keys and values (docs/api.md, Labels); the browser only splits the text.
 */
export type Labels = Record<string, string>;

/** `k=v` for a value, `k` alone for an empty one (as a label selector writes "has label k"). */
export const labelText = (key: string, value: string): string => (value ? `${key}=${value}` : key);

/** `env=prod, team=blue` from a map (sorted by key), for a text field. */
export const formatLabels = (labels: Labels): string =>
  Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(', ');

/** A map from `env=prod, team=blue, beta` (a key without `=` has the empty value). */
export function parseLabels(text: string): Labels {
  const labels: Labels = {};
  for (const term of text.split(',')) {
    const t = term.trim();
    if (!t) continue;
    const eq = t.indexOf('=');
    if (eq < 0) labels[t] = '';
    else labels[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  return labels;
}

/**
 * The labels as a list of chips; with `filterPath`, each chip is a link to that list filtered by
 * the label (`/servers?label_selector=env%3Dprod`), so a label is one click from its servers.
 */
export function LabelChips(props: { labels: Labels; filterPath?: string }) {
  const keys = Object.keys(props.labels).sort();
  if (keys.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="chips" aria-label="Labels">
      {keys.map((k) => {
        const text = labelText(k, props.labels[k] ?? '');
        const selector = `${k}=${props.labels[k] ?? ''}`;
        return (
          <li key={k}>
            {props.filterPath ? (
              <a
                class="chip"
                href={href(`${props.filterPath}?${new URLSearchParams({ label_selector: selector })}`)}
                title={`Show only servers labelled ${text}`}
              >
                {text}
              </a>
            ) : (
              <span class="chip">{text}</span>
            )}
          </li>
        );
      })}
    </ul>
  );
}
