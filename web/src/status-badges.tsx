import type { Schema } from './api.ts';
import { Badge, type Tone } from './ui.tsx';

/**
 * A server's status and power state as badges: the word is always written (colour is never the
 * only signal), the tone only adds to it. Used by the servers list and the server page.
 */
type Status = Schema<'ServerStatus'>;
type Power = Schema<'LiveState'>['powerState'];
type Install = Schema<'LiveState'>['installStatus'];

/** A server status's tone (the servers list, the server page, the admin tables). */
export const STATUS_TONE: Record<Status, Tone> = {
  active: 'ok',
  suspended: 'warn',
  deleted: 'neutral',
};

/** `active` / `suspended` / `deleted`; a suspension may say why (`balance`, `budget`). */
/** Why a server is suspended, as a customer reads it. */
const SUSPENDED_BY: Record<NonNullable<Schema<'Server'>['suspendedReason']>, string> = {
  balance: 'balance',
  budget: 'budget',
  admin: 'by operator',
};

export function StatusBadge(props: { status: Status; reason?: Schema<'Server'>['suspendedReason'] }) {
  return (
    <span data-testid="server-status" data-status={props.status}>
      <Badge tone={STATUS_TONE[props.status]}>
        {props.status}
        {props.status === 'suspended' && props.reason ? ` (${SUSPENDED_BY[props.reason]})` : ''}
      </Badge>
    </span>
  );
}

const POWER_TONE: Record<NonNullable<Power>, Tone> = {
  running: 'ok',
  starting: 'warn',
  stopping: 'warn',
  offline: 'neutral',
};

/** The panel's power state (`running`, `offline`, …), or "unknown" when the panel was not asked. */
export function PowerWord(props: { state: string | null | undefined }) {
  const tone = (props.state && POWER_TONE[props.state as NonNullable<Power>]) || 'neutral';
  return <Badge tone={tone}>{props.state ?? 'unknown'}</Badge>;
}

/** The power state of the page's server, with its test hook (once per page). */
export function PowerBadge(props: { state: Power }) {
  return (
    <span data-testid="power-state" data-state={props.state ?? 'unknown'}>
      <PowerWord state={props.state} />
    </span>
  );
}

const INSTALL_LABEL: Record<NonNullable<Install>, [string, 'ok' | 'warn' | 'bad']> = {
  installing: ['installing', 'warn'],
  installed: ['installed', 'ok'],
  install_failed: ['install failed', 'bad'],
};

/** The install state (`installing`, `installed`, `install failed`). */
export function InstallBadge(props: { status: Install }) {
  const [label, tone] = props.status ? INSTALL_LABEL[props.status] : ['unknown', 'neutral' as const];
  return (
    <span data-testid="install-status" data-status={props.status ?? 'unknown'}>
      <Badge tone={tone}>{label}</Badge>
    </span>
  );
}
