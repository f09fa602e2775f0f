import type { Schema } from './api.ts';
import { Field } from './form.tsx';

/**
 * An egg's settings at deploy (GET /v1/eggs/:instanceId/:eggId): each variable the customer may
 * edit, with its description and default, and the docker image when the egg offers several. The
 * form holds only what was changed; the API checks every value against the variable's rules.
 */
type Egg = Schema<'EggDetail'>;
type Variable = Schema<'EggVariable'>;

/** The values of an `in:a,b,c` rule, when the variable takes only those. */
function choices(rules: string): string[] | null {
  const rule = rules.split('|').find((r) => r.startsWith('in:'));
  return rule ? rule.slice(3).split(',') : null;
}

const required = (v: Variable) => v.rules.split('|').includes('required');

export function EggSettings(props: {
  egg: Egg;
  values: Record<string, string>;
  image: string;
  issues: Record<string, string>;
  onValue: (env: string, value: string) => void;
  onImage: (image: string) => void;
}) {
  const editable = props.egg.variables.filter((v) => v.editable);
  const images = Object.entries(props.egg.dockerImages);
  if (editable.length === 0 && images.length < 2) return <p class="muted">This game has no settings to choose at deploy.</p>;
  return (
    <>
      {images.length > 1 ? (
        <Field id="deploy-image" label="Docker image" hint="The runtime the server starts in." error={props.issues.dockerImage}>
          {(control) => (
            <select {...control} value={props.image || props.egg.defaultDockerImage} onChange={(e) => props.onImage(e.currentTarget.value)}>
              {images.map(([label, image]) => (
                <option key={image} value={image}>
                  {label}
                  {image === props.egg.defaultDockerImage ? ' (default)' : ''}
                </option>
              ))}
            </select>
          )}
        </Field>
      ) : null}
      {editable.map((v) => {
        const id = `deploy-var-${v.env}`;
        const value = props.values[v.env] ?? v.default ?? '';
        const issue = props.issues[`environment.${v.env}`];
        const options = choices(v.rules);
        const hint = (
          <>
            {v.description}
            {v.default ? (
              <>
                {' '}
                Default: <code>{v.default}</code>.
              </>
            ) : null}
          </>
        );
        return (
          <Field key={v.env} id={id} label={v.name} hint={hint} error={issue}>
            {(control) =>
              options ? (
                <select {...control} name={v.env} value={value} onChange={(e) => props.onValue(v.env, e.currentTarget.value)}>
                  {options.map((o) => (
                    <option key={o} value={o}>
                      {o}
                    </option>
                  ))}
                </select>
              ) : (
                <input
                  {...control}
                  name={v.env}
                  value={value}
                  required={required(v)}
                  spellcheck={false}
                  autoComplete="off"
                  onInput={(e) => props.onValue(v.env, e.currentTarget.value)}
                />
              )
            }
          </Field>
        );
      })}
    </>
  );
}

/** The variables to send: only those whose value differs from the egg's default. */
export function changedEnvironment(egg: Egg | undefined, values: Record<string, string>): Record<string, string> {
  const environment: Record<string, string> = {};
  if (!egg) return environment;
  for (const v of egg.variables) {
    if (!v.editable || !(v.env in values)) continue;
    if (values[v.env] !== (v.default ?? '')) environment[v.env] = values[v.env]!;
  }
  return environment;
}
