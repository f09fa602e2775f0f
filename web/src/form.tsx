import type { ComponentChildren } from 'preact';

/**
 * The one form-field pattern: a label, the control, and its hint and error, wired for screen
 * readers. Every form of the dashboard builds its fields from Field (or DollarsField).
 */

/** The attributes a Field hands its control: its id, its description (the hint) and its validity. */
export interface FieldControl {
  id: string;
  'aria-describedby'?: string;
  'aria-invalid'?: 'true';
}

/**
 * A labelled form field: the label is tied to the control by id; the hint (`${id}-hint`), with the
 * error in front of it as `.field-error`, describes the control (aria-describedby); an error, or
 * `invalid`, marks it aria-invalid. The control is rendered by `children(control)` with the
 * attributes spread onto it; a plain child (a checkbox list, a read-only text) gets none of them.
 */
export function Field(props: {
  id: string;
  label: ComponentChildren;
  hint?: ComponentChildren;
  error?: ComponentChildren;
  invalid?: boolean;
  class?: string;
  children: ComponentChildren | ((control: FieldControl) => ComponentChildren);
}) {
  const { id, hint, error } = props;
  const described = Boolean(hint) || Boolean(error);
  const control: FieldControl = {
    id,
    'aria-describedby': described ? `${id}-hint` : undefined,
    'aria-invalid': error || props.invalid ? 'true' : undefined,
  };
  return (
    <div class={props.class ? `field ${props.class}` : 'field'}>
      <label for={id}>{props.label}</label>
      {typeof props.children === 'function' ? props.children(control) : props.children}
      {described ? (
        <small id={`${id}-hint`} class="hint">
          {error ? <strong class="field-error">{error}</strong> : null}
          {error && hint ? ' ' : null}
          {hint}
        </small>
      ) : null}
    </div>
  );
}

/** An amount in the platform's currency typed as text ("20", "20.50"): a decimal keypad on phones, no autofill. */
export function DollarsField(props: {
  id: string;
  label: string;
  hint?: ComponentChildren;
  error?: ComponentChildren;
  invalid?: boolean;
  name?: string;
  required?: boolean;
  value: string;
  onInput: (value: string) => void;
}) {
  const { value, onInput, name, required, ...field } = props;
  return (
    <Field {...field}>
      {(control) => (
        <input
          {...control}
          name={name}
          type="text"
          inputMode="decimal"
          autoComplete="off"
          required={required}
          value={value}
          onInput={(e) => onInput(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}
