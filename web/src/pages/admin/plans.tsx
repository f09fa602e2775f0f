import { useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../../api.ts';
import { cents, mb, millicents } from '../../format.ts';
import { Field } from '../../form.tsx';
import { TableWrap } from '../../table.tsx';
import { Badge, Button, ErrorNotice, Loading, Notice, Page, useAction, useLoad } from '../../ui.tsx';

type Plan = Schema<'Plan'>;

/** The form's text of a plan; an empty price means "derived from the resources". */
const EMPTY = {
  name: '',
  category: '',
  description: '',
  pictureUrl: '',
  ramMb: '1024',
  cpuPercent: '100',
  diskMb: '5120',
  backups: '0',
  databases: '0',
  ports: '0',
  eggIds: '',
  price: '',
  visible: true,
};
type Values = typeof EMPTY;

const valuesOf = (p: Plan): Values => ({
  name: p.name,
  category: p.category,
  description: p.description,
  pictureUrl: p.pictureUrl ?? '',
  ramMb: String(p.resources.ramMb),
  cpuPercent: String(p.resources.cpuPercent),
  diskMb: String(p.resources.diskMb),
  backups: String(p.addons.backups),
  databases: String(p.addons.databases),
  ports: String(p.addons.ports),
  eggIds: p.eggIds.join(', '),
  price: p.setPriceMillicentsPerHour === null ? '' : String(p.setPriceMillicentsPerHour),
  visible: p.visible,
});

const bodyOf = (v: Values): Schema<'CreatePlan'> => ({
  name: v.name,
  category: v.category,
  description: v.description,
  pictureUrl: v.pictureUrl.trim() ? v.pictureUrl.trim() : null,
  resources: { ramMb: Number(v.ramMb), cpuPercent: Number(v.cpuPercent), diskMb: Number(v.diskMb) },
  addons: { backups: Number(v.backups), databases: Number(v.databases), ports: Number(v.ports) },
  eggIds: v.eggIds
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number),
  setPriceMillicentsPerHour: v.price.trim() ? Number(v.price) : null,
  visible: v.visible,
});

/** Plans (GET/POST /v1/admin/plans, PATCH/DELETE …/:id): the storefront's offers, hidden or shown. */
export default function AdminPlans() {
  const plans = useLoad(() => ok(api().GET('/v1/admin/plans')));
  const [editing, setEditing] = useState<Plan | null>(null);
  const toggle = useAction(async (p: Plan) => {
    await ok(api().PATCH('/v1/admin/plans/{id}', { params: { path: { id: p.id } }, body: { visible: !p.visible } }));
    await plans.reload();
  });
  return (
    <Page title="Plans">
      <p class="muted">
        What customers buy on the deploy page. A deploy on a plan gets its resources and its price; hidden plans are not sold.
      </p>
      {toggle.error ? <ErrorNotice error={toggle.error} /> : null}
      <Loading state={plans} label="Loading the plans…">
        {(list) =>
          list.data.length === 0 ? (
            <Notice>No plan yet: customers choose a custom size. Create one below.</Notice>
          ) : (
            <TableWrap label="Plans">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Plan</th>
                    <th scope="col">Category</th>
                    <th scope="col">Resources</th>
                    <th scope="col">Price</th>
                    <th scope="col">Shown</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.map((p) => (
                    <tr key={p.id}>
                      <td>{p.name}</td>
                      <td>{p.category}</td>
                      <td>
                        {mb(p.resources.ramMb)} · {p.resources.cpuPercent} % · {mb(p.resources.diskMb)}
                      </td>
                      <td>
                        {millicents(p.priceMillicentsPerHour)}/h ({cents(p.monthlyEstimateCents)}/month)
                        {p.setPriceMillicentsPerHour === null ? '' : ' set'}
                      </td>
                      <td>{p.visible ? <Badge tone="ok">shown</Badge> : <Badge>hidden</Badge>}</td>
                      <td>
                        <Button onClick={() => setEditing(p)} aria-label={`Edit ${p.name}`}>
                          Edit
                        </Button>{' '}
                        <Button
                          onClick={() => void toggle.run(p)}
                          busy={toggle.busy}
                          aria-label={`${p.visible ? 'Hide' : 'Show'} ${p.name}`}
                        >
                          {p.visible ? 'Hide' : 'Show'}
                        </Button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )
        }
      </Loading>
      <PlanForm
        key={editing?.id ?? 'new'}
        plan={editing}
        onSaved={() => {
          setEditing(null);
          void plans.reload();
        }}
      />
    </Page>
  );
}

const FIELDS: { key: keyof Values; label: string; hint?: string; type?: 'number' | 'url' | 'text' }[] = [
  { key: 'name', label: 'Name' },
  { key: 'category', label: 'Category', hint: 'The storefront groups plans by it, e.g. Minecraft.' },
  { key: 'description', label: 'Description' },
  { key: 'pictureUrl', label: 'Picture URL', hint: 'https only; empty for none.', type: 'url' },
  { key: 'ramMb', label: 'RAM (MB)', type: 'number' },
  { key: 'cpuPercent', label: 'CPU (%)', hint: '100 = one core.', type: 'number' },
  { key: 'diskMb', label: 'Disk (MB)', type: 'number' },
  { key: 'backups', label: 'Included extra backup slots', type: 'number' },
  { key: 'databases', label: 'Included extra databases', type: 'number' },
  { key: 'ports', label: 'Included extra ports', type: 'number' },
  { key: 'eggIds', label: 'Egg ids', hint: 'Comma-separated panel egg ids; empty: any egg.' },
  { key: 'price', label: 'Set price (millicents an hour)', hint: 'Empty: derived from the resources and add-ons.', type: 'number' },
];

function PlanForm(props: { plan: Plan | null; onSaved: () => void }) {
  const [values, setValues] = useState<Values>(props.plan ? valuesOf(props.plan) : EMPTY);
  const save = useAction(async () => {
    const body = bodyOf(values);
    if (props.plan) await ok(api().PATCH('/v1/admin/plans/{id}', { params: { path: { id: props.plan.id } }, body }));
    else await ok(api().POST('/v1/admin/plans', { body, params: { header: { 'Idempotency-Key': crypto.randomUUID() } } }));
    props.onSaved();
  });
  const issues = fieldIssues(save.error);
  const issueOf = (key: keyof Values): string | undefined =>
    Object.entries(issues).find(([k]) => k === key || k.endsWith(`.${key}`) || (key === 'price' && k === 'setPriceMillicentsPerHour'))?.[1];
  return (
    <form
      class="card"
      aria-labelledby="plan-form-title"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void save.run();
      }}
    >
      <h2 id="plan-form-title">{props.plan ? `Edit ${props.plan.name}` : 'New plan'}</h2>
      {FIELDS.map((f) => (
        <Field key={f.key} id={`plan-${f.key}`} label={f.label} hint={f.hint} error={issueOf(f.key)}>
          {(control) => (
            <input
              {...control}
              inputMode={f.type === 'number' ? 'numeric' : f.type === 'url' ? 'url' : 'text'}
              value={String(values[f.key])}
              onInput={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })}
              autoComplete="off"
            />
          )}
        </Field>
      ))}
      <div class="field">
        <label>
          <input type="checkbox" checked={values.visible} onChange={(e) => setValues({ ...values, visible: e.currentTarget.checked })} />{' '}
          Shown to customers
        </label>
      </div>
      {save.error ? <ErrorNotice error={save.error} /> : null}
      <Button type="submit" kind="primary" busy={save.busy}>
        {props.plan ? 'Save plan' : 'Create plan'}
      </Button>
    </form>
  );
}
