import type { Schema } from '../../api.ts';
import { cents, mb, millicents } from '../../format.ts';

type Plan = Schema<'Plan'>;

/** A 730-hour month, as the API's `monthlyEstimateCents`. */
const HOURS_PER_MONTH = 730;

/**
 * The storefront: the operator's plans as cards grouped by category, each a radio button (one
 * group, so the arrow keys move between them and a screen reader says "n of m"), then "Custom size"
 * when the operator allows it. The value is a plan id, or '' for a custom size.
 */
export function PlanCards(props: { plans: Plan[]; customAllowed: boolean; value: string; onChange: (planId: string) => void }) {
  const categories = new Map<string, Plan[]>();
  for (const p of props.plans) categories.set(p.category, [...(categories.get(p.category) ?? []), p]);
  return (
    <fieldset class="storefront">
      <legend>Plan</legend>
      {[...categories].map(([category, plans]) => (
        <section key={category} class="plan-category" aria-label={category}>
          <h2>{category}</h2>
          <div class="plan-cards">
            {plans.map((p) => (
              <label key={p.id} class={`card plan-card${props.value === p.id ? ' chosen' : ''}`} data-testid="plan-card">
                <input type="radio" name="plan" value={p.id} checked={props.value === p.id} onChange={() => props.onChange(p.id)} />
                {p.pictureUrl ? <img src={p.pictureUrl} alt="" width={64} height={64} loading="lazy" /> : null}
                <span class="plan-name">{p.name}</span>
                {p.description ? <span class="muted">{p.description}</span> : null}
                <span>
                  {mb(p.resources.ramMb)} RAM · {p.resources.cpuPercent / 100} core{p.resources.cpuPercent === 100 ? '' : 's'} ·{' '}
                  {mb(p.resources.diskMb)} disk
                </span>
                <span class="plan-price">
                  {millicents(p.priceMillicentsPerHour)}/hour · {cents(Math.ceil((p.priceMillicentsPerHour * HOURS_PER_MONTH) / 1000))}
                  /month
                </span>
              </label>
            ))}
          </div>
        </section>
      ))}
      {props.customAllowed ? (
        <label class={`card plan-card${props.value === '' ? ' chosen' : ''}`}>
          <input type="radio" name="plan" value="" checked={props.value === ''} onChange={() => props.onChange('')} />
          <span class="plan-name">Custom size</span>
          <span class="muted">Choose RAM, CPU and disk yourself.</span>
        </label>
      ) : null}
    </fieldset>
  );
}
