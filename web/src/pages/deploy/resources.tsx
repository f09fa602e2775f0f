import type { Schema } from '../../api.ts';
import { mb } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Button } from '../../ui.tsx';

export const PRESETS = [
  { name: 'Small', ramMb: 1024, cpuPercent: 50, diskMb: 5120 },
  { name: 'Medium', ramMb: 2048, cpuPercent: 100, diskMb: 10240 },
  { name: 'Large', ramMb: 4096, cpuPercent: 200, diskMb: 20480 },
] as const;

type Limits = Schema<'Pricing'>['serverLimits'];
type Resource = 'ramMb' | 'cpuPercent' | 'diskMb';
export type Resources = Record<Resource, string>;

const clamp = (limits: Limits, key: Resource, value: number) => Math.min(limits[key].max, Math.max(limits[key].min, value));

/** A preset's figures as the fields hold them, kept within the platform's limits. */
export const presetValues = (limits: Limits, preset: (typeof PRESETS)[number]): Resources => ({
  ramMb: String(clamp(limits, 'ramMb', preset.ramMb)),
  cpuPercent: String(clamp(limits, 'cpuPercent', preset.cpuPercent)),
  diskMb: String(clamp(limits, 'diskMb', preset.diskMb)),
});

/** The three resource fields: each with its step and how its value reads ("2 GB", "1 core"). */
const FIELDS: { key: Resource; id: string; label: string; step: number; reads: (value: string) => string }[] = [
  { key: 'ramMb', id: 'deploy-ram', label: 'RAM (MB)', step: 256, reads: (v) => mb(Number(v || 0)) },
  {
    key: 'cpuPercent',
    id: 'deploy-cpu',
    label: 'CPU (%)',
    step: 25,
    reads: (v) => `${Number(v || 0) / 100} core${v === '100' ? '' : 's'}`,
  },
  { key: 'diskMb', id: 'deploy-disk', label: 'Disk (MB)', step: 512, reads: (v) => mb(Number(v || 0)) },
];

/** RAM, CPU and disk: the presets as toggle buttons, then a number field for each. */
export function ResourcesFieldset(props: {
  limits: Limits;
  values: Resources;
  issues: Record<string, string | undefined>;
  onChange: (values: Resources) => void;
}) {
  const { limits, values } = props;
  return (
    <fieldset>
      <legend>Resources</legend>
      <div class="actions presets">
        {PRESETS.map((p) => {
          const preset = presetValues(limits, p);
          const pressed = FIELDS.every((f) => preset[f.key] === values[f.key]);
          return (
            <Button key={p.name} aria-pressed={pressed ? 'true' : 'false'} onClick={() => props.onChange(preset)}>
              {p.name}: {mb(Number(preset.ramMb))}, {Number(preset.cpuPercent) / 100} CPU, {mb(Number(preset.diskMb))} disk
            </Button>
          );
        })}
      </div>
      <div class="resource-fields">
        {FIELDS.map((f) => (
          <Field
            key={f.key}
            id={f.id}
            label={f.label}
            hint={`${f.reads(values[f.key])} · ${limits[f.key].min} to ${limits[f.key].max}`}
            error={props.issues[f.key]}
          >
            {(control) => (
              <input
                {...control}
                type="number"
                inputMode="numeric"
                min={limits[f.key].min}
                max={limits[f.key].max}
                step={f.step}
                value={values[f.key]}
                onInput={(e) => props.onChange({ ...values, [f.key]: e.currentTarget.value })}
                required
              />
            )}
          </Field>
        ))}
      </div>
    </fieldset>
  );
}
