import { href } from './router.ts';

/**
 * Labels (`{ env: 'prod' }`) as chips, and as the text a person types (`env=prod, team=blue`). The
 * API checks keys and values (docs/api.md, Labels); the browser splits the text (and, where asked,
 * refuses a term without a key).
 */
export type Labels = Record<string, string>;

/** `k=v` for a value, `k` alone for an empty one (as a label selector writes "has label k"). */
export const labelText = (key: string, value: string): string => (value ? `${key}=${value}` : key);

/** `env=prod, team=blue` from a map, for a text field (a key with the empty value stands alone). */
export const formatLabels = (labels: Labels): string =>
  Object.entries(labels)
    .map(([k, v]) => labelText(k, v))
    .join(', ');

/** The `key=value` terms of `env=prod, team=blue, beta` (commas or new lines between them). */
function labelTerms(text: string): { term: string; key: string; value: string }[] {
  const terms = [];
  for (const part of text.split(/[,\n]/)) {
    const term = part.trim();
    if (!term) continue;
    const eq = term.indexOf('=');
    terms.push({ term, key: (eq < 0 ? term : term.slice(0, eq)).trim(), value: eq < 0 ? '' : term.slice(eq + 1).trim() });
  }
  return terms;
}

/**
 * A map from `env=prod, team=blue, beta` (a key without `=` has the empty value), as typed: a term
 * without a key or a key given twice goes to the API as it is, for the API to name the fault.
 */
export function parseLabels(text: string): Labels {
  const labels: Labels = {};
  for (const { key, value } of labelTerms(text)) labels[key] = value;
  return labels;
}

/** The same map, refused here with a message when a term has no key or a key is given twice. */
export function parseLabelsStrictly(text: string): Labels {
  const labels: Labels = {};
  for (const { term, key, value } of labelTerms(text)) {
    if (!key) throw new Error(`Label "${term}" has no key: write key=value.`);
    if (key in labels) throw new Error(`Label "${key}" is given twice.`);
    labels[key] = value;
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
