import type { Schema } from './api.ts';
import { millicents } from './format.ts';
import { Field } from './form.tsx';

/**
 * The add-on fields (extra backup slots, databases, ports) of the deploy form and of a server's
 * settings: one number field each, bounded by the platform's maximum, with what a server includes
 * and the API's price of one extra (GET /v1/pricing `addons`) in the hint.
 */
export type AddonKey = 'backups' | 'databases' | 'ports';
export type AddonValues = Record<AddonKey, string>;
type AddonPrice = Schema<'Pricing'>['addons'][number];

const LABELS: Record<AddonKey, { label: string; included: (n: number) => string }> = {
  backups: { label: 'Extra backup slots', included: (n) => `${n} backup${n === 1 ? '' : 's'} included` },
  databases: { label: 'Extra databases', included: (n) => `${n} database${n === 1 ? '' : 's'} included` },
  ports: { label: 'Extra ports', included: (n) => `${n} port${n === 1 ? '' : 's'} included (the primary)` },
};

export const addonValues = (addons: Record<AddonKey, number>): AddonValues => ({
  backups: String(addons.backups),
  databases: String(addons.databases),
  ports: String(addons.ports),
});

/** The values as the API takes them, or null while one is not a whole number. */
export function parseAddons(values: AddonValues): Record<AddonKey, number> | null {
  const n = { backups: Number(values.backups || 0), databases: Number(values.databases || 0), ports: Number(values.ports || 0) };
  return Object.values(n).every((v) => Number.isInteger(v) && v >= 0) ? n : null;
}

export function AddonFields(props: {
  idPrefix: string;
  prices: AddonPrice[];
  values: AddonValues;
  issues?: Record<string, string | undefined>;
  onChange: (values: AddonValues) => void;
}) {
  return (
    <div class="resource-fields addon-fields">
      {props.prices
        .filter((p) => p.max > 0)
        .map((p) => (
          <Field
            key={p.addon}
            id={`${props.idPrefix}-${p.addon}`}
            label={LABELS[p.addon].label}
            hint={`${LABELS[p.addon].included(p.included)} · ${millicents(p.millicentsPerUnitHour)}/h each · at most ${p.max}`}
            error={props.issues?.[p.addon]}
          >
            {(control) => (
              <input
                {...control}
                type="number"
                inputMode="numeric"
                min={0}
                max={p.max}
                step={1}
                value={props.values[p.addon]}
                onInput={(e) => props.onChange({ ...props.values, [p.addon]: e.currentTarget.value })}
              />
            )}
          </Field>
        ))}
    </div>
  );
}
