import type { Schema } from './api.ts';

/**
 * What the API keys and webhooks pages share: the scopes and event types as checkbox fieldsets.
 * The enums are types in the client, so their values are listed here in records keyed by the type:
 * a value added to the API and missing here is a compile error.
 */
export type Scope = Schema<'Scope'>;
export type EventType = Schema<'EventType'>;

const SCOPE_INFO: Record<Scope, string> = {
  'account:read': 'Read the account and its activity',
  'keys:write': 'Create, label and revoke API keys',
  'servers:read': 'List servers, quotes and the catalogue',
  'servers:write': 'Deploy, control, resize and delete servers',
  'billing:read': 'Read the ledger, invoices and budget',
  'billing:write': 'Top up, set the budget and auto top-up',
  'webhooks:read': 'Read webhook endpoints, deliveries and events',
  'webhooks:write': 'Add, change and delete webhook endpoints',
  admin: 'Administer the service (admin routes)',
};
export const SCOPES = Object.keys(SCOPE_INFO) as Scope[];

/** The event types under the scope that reads them (docs/webhooks.md, "Who sees which events"). */
const EVENT_GROUP: Record<EventType, string> = {
  'server.created': 'Servers',
  'server.resized': 'Servers',
  'server.suspended': 'Servers',
  'server.unsuspended': 'Servers',
  'server.deleted': 'Servers',
  'server.installed': 'Servers',
  'server.reinstalled': 'Servers',
  'server.install_failed': 'Servers',
  'balance.low': 'Billing',
  'invoice.paid': 'Billing',
  'invoice.void': 'Billing',
  'invoice.refunded': 'Billing',
  'invoice.disputed': 'Billing',
  'credit_note.issued': 'Billing',
  'ledger.entry': 'Billing',
  'account.debt': 'Billing',
  'account.debt_settled': 'Billing',
  'balance.runway_warning': 'Billing',
  'auto_topup.failed': 'Billing',
  'auto_topup.disabled': 'Billing',
  'webhook_endpoint.disabled': 'Webhooks',
  'api_key.created': 'Security',
  'account.sftp_password_set': 'Security',
  'account.email_change_requested': 'Security',
  'account.email_changed': 'Security',
};
export const EVENT_TYPES = Object.keys(EVENT_GROUP) as EventType[];

const toggle = <T,>(list: T[], item: T, on: boolean): T[] =>
  on ? [...list.filter((x) => x !== item), item] : list.filter((x) => x !== item);

/** The scopes a new key gets, as checkboxes; `admin` only for admins. */
export function ScopeFieldset(props: { value: Scope[]; onChange: (value: Scope[]) => void; isAdmin: boolean }) {
  const offered = SCOPES.filter((s) => s !== 'admin' || props.isAdmin);
  const ordered = (list: Scope[]) => offered.filter((s) => list.includes(s));
  return (
    <fieldset class="checks" aria-describedby="key-scopes-hint">
      <legend>Scopes</legend>
      <p id="key-scopes-hint" class="hint">
        What the key may do; never more than your own account can. Choose at least one.
      </p>
      <div class="check-actions">
        <button type="button" class="link" onClick={() => props.onChange(offered.filter((s) => s !== 'admin'))}>
          Select all
        </button>
        <button type="button" class="link" onClick={() => props.onChange([])}>
          Clear
        </button>
      </div>
      <ul class="check-list">
        {offered.map((scope) => (
          <li key={scope}>
            <input
              type="checkbox"
              id={`scope-${scope.replace(':', '-')}`}
              name="scopes"
              value={scope}
              checked={props.value.includes(scope)}
              onChange={(e) => props.onChange(ordered(toggle(props.value, scope, e.currentTarget.checked)))}
            />
            <label for={`scope-${scope.replace(':', '-')}`}>
              <code>{scope}</code> <span class="muted">{SCOPE_INFO[scope]}</span>
            </label>
          </li>
        ))}
      </ul>
    </fieldset>
  );
}

/** An endpoint's choice of event types: every type (new ones too), or the ones chosen. */
export interface EventChoice {
  all: boolean;
  chosen: EventType[];
}

export const eventChoice = (events: EventType[]): EventChoice => ({ all: events.length === 0, chosen: events });

/** The `events` the API takes for a choice: empty for all; an error when none is chosen. */
export function eventsOf(choice: EventChoice): EventType[] {
  if (choice.all) return [];
  if (choice.chosen.length === 0) throw new Error('Choose at least one event type, or "All event types".');
  return choice.chosen;
}

/** The event types as checkboxes, behind an "All event types" checkbox. */
export function EventFieldset(props: { idPrefix: string; value: EventChoice; onChange: (value: EventChoice) => void }) {
  const { all, chosen } = props.value;
  const id = (type: EventType) => `${props.idPrefix}-${type.replace(/[._]/g, '-')}`;
  return (
    <fieldset class="checks">
      <legend>Event types</legend>
      <p class="check">
        <input
          type="checkbox"
          id={`${props.idPrefix}-all`}
          checked={all}
          onChange={(e) => props.onChange({ all: e.currentTarget.checked, chosen })}
        />
        <label for={`${props.idPrefix}-all`}>
          <strong>All event types</strong> <span class="muted">(including types added later)</span>
        </label>
      </p>
      {all ? null : (
        <ul class="check-list columns">
          {EVENT_TYPES.map((type) => (
            <li key={type}>
              <input
                type="checkbox"
                id={id(type)}
                name="events"
                value={type}
                checked={chosen.includes(type)}
                onChange={(e) =>
                  props.onChange({
                    all,
                    chosen: EVENT_TYPES.filter((t) => (t === type ? e.currentTarget.checked : chosen.includes(t))),
                  })
                }
              />
              <label for={id(type)}>
                <code>{type}</code> <span class="muted">{EVENT_GROUP[type]}</span>
              </label>
            </li>
          ))}
        </ul>
      )}
    </fieldset>
  );
}
