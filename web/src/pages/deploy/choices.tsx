import type { Schema } from '../../api.ts';
import { mb } from '../../format.ts';
import { Field } from '../../form.tsx';
import { regionLabel } from '../../regions.tsx';

type Egg = Schema<'EggSummary'>;
type Region = Schema<'RegionList'>['data'][number];

/** An egg's key in the form: egg ids are per panel. */
export const eggKey = (e: { instanceId: string; eggId: number }) => `${e.instanceId}/${e.eggId}`;

/** The game to deploy, grouped by nest (and panel, when there are several). */
export function EggField(props: {
  eggs: Egg[];
  value: string;
  hint: string | null;
  issue: string | undefined;
  withPanel: boolean;
  onChange: (key: string) => void;
}) {
  return (
    <Field id="deploy-egg" label="Game (egg)" hint={props.hint} error={props.issue}>
      {(control) => (
        <select {...control} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          {groupByNest(props.eggs, props.withPanel).map(([group, list]) => (
            <optgroup key={group} label={group}>
              {list.map((e) => (
                <option key={eggKey(e)} value={eggKey(e)}>
                  {e.name}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
      )}
    </Field>
  );
}

/** The region, each with the room it has; the chosen one's room is the hint. */
export function RegionField(props: {
  regions: Region[];
  value: string;
  minRamMb: number;
  issue: string | undefined;
  onChange: (region: string) => void;
}) {
  const chosen = props.regions.find((r) => r.region === props.value);
  return (
    <Field
      id="deploy-region"
      label="Region"
      hint={
        chosen
          ? `${chosen.nodes} node${chosen.nodes === 1 ? '' : 's'}; room for up to ${mb(Math.max(0, chosen.largestFreeMemoryMb))} of RAM on one node, ${mb(Math.max(0, chosen.freeDiskMb))} of disk free.`
          : 'Any region: placed on the node with the most room.'
      }
      error={props.issue}
    >
      {(control) => (
        <select {...control} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          <option value="">Any region</option>
          {props.regions.map((r) => (
            <option key={r.region} value={r.region}>
              {regionLabel(r, true)}
              {r.nodes === 0 || r.largestFreeMemoryMb < props.minRamMb ? ' (full)' : ` (up to ${mb(r.largestFreeMemoryMb)} free)`}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** Eggs grouped by nest (and panel, when there are several), in the catalogue's order. */
function groupByNest(eggs: Egg[], withPanel: boolean): [string, Egg[]][] {
  const groups = new Map<string, Egg[]>();
  for (const e of eggs) {
    const group = withPanel ? `${e.nestName} · ${e.instanceName}` : e.nestName;
    groups.set(group, [...(groups.get(group) ?? []), e]);
  }
  return [...groups];
}
