import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { Button, ErrorNotice } from '../../ui.tsx';

/**
 * The server tabs' modal dialog (D2): like ui.tsx's Confirm, a native <dialog> (focus trapped,
 * Escape closes it), but a <form> so Enter confirms from a field inside, with its own ids (one per
 * tab), a confirm button that can be disabled (the delete's typed name) and the action's error shown
 * inside it. Each tab keeps one mounted and changes what it says.
 */
export function TabDialog(props: {
  id: string;
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  disabled?: boolean;
  error?: unknown;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  return (
    <dialog
      ref={ref}
      id={props.id}
      aria-labelledby={`${props.id}-title`}
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
    >
      <form
        class="tab-dialog"
        onSubmit={(event) => {
          event.preventDefault();
          if (!props.disabled && !props.busy) props.onConfirm();
        }}
      >
        <h2 id={`${props.id}-title`}>{props.title}</h2>
        {props.open ? props.children : null}
        <ErrorNotice error={props.error} />
        <div class="actions">
          <Button onClick={props.onCancel}>Cancel</Button>
          <Button type="submit" kind={props.danger ? 'danger' : 'primary'} busy={props.busy} disabled={props.disabled}>
            {props.confirmLabel}
          </Button>
        </div>
      </form>
    </dialog>
  );
}

/** The `details.issues` of a validation error as field → message (`body.variables.X` → "…"). */
export function fieldIssues(error: unknown): Record<string, string> {
  const issues = (error as { details?: { issues?: { field: string; message: string }[] } } | null)?.details?.issues;
  const out: Record<string, string> = {};
  for (const issue of Array.isArray(issues) ? issues : []) out[issue.field] = issue.message;
  return out;
}
