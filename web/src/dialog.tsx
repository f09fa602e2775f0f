import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';
import { Button, ErrorNotice } from './ui.tsx';

export interface DialogProps {
  open: boolean;
  /** The <dialog>'s id (its heading is `${id}-title`); by default one of its own (useId). */
  id?: string;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  /** The confirm button is disabled (and Enter does nothing), e.g. until a name is typed. */
  disabled?: boolean;
  /** The action's error, shown inside the dialog above its buttons. */
  error?: unknown;
  onConfirm: () => void;
  onCancel: () => void;
}

/**
 * A modal <dialog> (focus trapped, Escape → onCancel, natively) holding a <form>: Enter in a field
 * confirms. Its children are rendered only while it is open, so a form inside starts afresh.
 */
export function Dialog(props: DialogProps) {
  const ownId = useId();
  const id = props.id ?? ownId;
  const ref = useRef<HTMLDialogElement>(null);
  const open = useRef(props.open);
  open.current = props.open;
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  return (
    <dialog
      ref={ref}
      id={id}
      aria-labelledby={`${id}-title`}
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
      onClose={() => {
        // Closed by the browser itself (a repeated Escape): the page's state follows.
        if (open.current) props.onCancel();
      }}
    >
      <form
        onSubmit={(event) => {
          event.preventDefault();
          // A dialog may sit inside a page's form: its submit is its own.
          event.stopPropagation();
          if (!props.disabled && !props.busy) props.onConfirm();
        }}
      >
        <h2 id={`${id}-title`}>{props.title}</h2>
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

/** A confirmation: a Dialog whose body says what will happen. */
export function Confirm(props: DialogProps) {
  return <Dialog {...props} />;
}
