import { useState } from 'preact/hooks';
import { fieldIssues, type Schema } from '../../api.ts';
import { href, navigate } from '../../router.ts';
import { Field } from '../../form.tsx';
import { type Region, regionLabel } from '../../regions.tsx';
import { Button } from '../../ui.tsx';

const FILTERS = ['name_prefix', 'status', 'region', 'instanceId', 'label_selector'] as const;
type FilterName = (typeof FILTERS)[number];
export type Filters = Partial<Record<FilterName, string>>;

export function filtersFrom(query: URLSearchParams): Filters {
  const filters: Filters = {};
  for (const name of FILTERS) {
    const value = query.get(name)?.trim();
    if (value) filters[name] = value;
  }
  return filters;
}

/** The API's complaint about one query field (`query.label_selector`), shown next to it. */
const issueFor = (error: unknown, field: string): string | undefined => fieldIssues(error)[`query.${field}`];

export /** The filters as a form: submitting it puts them in the URL, which loads the list again. */
function FilterForm(props: { filters: Filters; regions: Region[]; instances: Schema<'PublicInstance'>[]; error: unknown }) {
  const [values, setValues] = useState<Filters>(props.filters);
  const set = (name: FilterName) => (event: Event) =>
    setValues((v) => ({ ...v, [name]: (event.currentTarget as HTMLInputElement | HTMLSelectElement).value }));
  const submit = (event: Event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const name of FILTERS) {
      const value = values[name]?.trim();
      if (value) query.set(name, value);
    }
    const search = query.toString();
    navigate(`/servers${search ? `?${search}` : ''}`);
  };
  // By name; a tag in the address that the catalogue does not list is offered as itself.
  const named = new Map(props.regions.map((r) => [r.region, regionLabel(r)]));
  if (props.filters.region && !named.has(props.filters.region)) named.set(props.filters.region, props.filters.region);
  const regions = [...named].sort((a, b) => a[1].localeCompare(b[1]));
  const selectorIssue = issueFor(props.error, 'label_selector');
  const nameIssue = issueFor(props.error, 'name_prefix');
  return (
    <form id="server-filters" class="card filters" aria-label="Filter servers" onSubmit={submit}>
      <Field id="filter-name" label="Name starts with" error={nameIssue}>
        {(control) => (
          <input {...control} name="name_prefix" value={values.name_prefix ?? ''} onInput={set('name_prefix')} maxLength={60} />
        )}
      </Field>
      <Field id="filter-status" label="Status">
        {(control) => (
          <select {...control} name="status" value={values.status ?? ''} onChange={set('status')}>
            <option value="">Any</option>
            <option value="active">Active</option>
            <option value="suspended">Suspended</option>
            <option value="deleted">Deleted</option>
          </select>
        )}
      </Field>
      <Field id="filter-region" label="Region">
        {(control) => (
          <select {...control} name="region" value={values.region ?? ''} onChange={set('region')}>
            <option value="">Any</option>
            {regions.map(([tag, label]) => (
              <option key={tag} value={tag}>
                {label}
              </option>
            ))}
          </select>
        )}
      </Field>
      {props.instances.length > 1 || props.filters.instanceId ? (
        <Field id="filter-instance" label="Panel">
          {(control) => (
            <select {...control} name="instanceId" value={values.instanceId ?? ''} onChange={set('instanceId')}>
              <option value="">Any</option>
              {props.instances.map((i) => (
                <option key={i.id} value={i.id}>
                  {i.name}
                </option>
              ))}
              {props.filters.instanceId && !props.instances.some((i) => i.id === props.filters.instanceId) ? (
                <option value={props.filters.instanceId}>{props.filters.instanceId}</option>
              ) : null}
            </select>
          )}
        </Field>
      ) : null}
      <Field
        id="filter-labels"
        label="Labels"
        hint={
          selectorIssue ? undefined : (
            <>
              For example <code>env=prod,!temp</code> (<code>k=v</code>, <code>k!=v</code>, <code>k</code>, <code>!k</code>)
            </>
          )
        }
        error={selectorIssue}
      >
        {(control) => (
          <input
            {...control}
            name="label_selector"
            value={values.label_selector ?? ''}
            onInput={set('label_selector')}
            spellcheck={false}
            autoComplete="off"
          />
        )}
      </Field>
      <div class="actions filter-actions">
        <Button type="submit" kind="primary">
          Apply filters
        </Button>
        {Object.keys(props.filters).length > 0 ? (
          <a class="btn" href={href('/servers')}>
            Clear filters
          </a>
        ) : null}
      </div>
    </form>
  );
}
