import type { ComponentChildren } from 'preact';
import type { Schema } from '../../api.ts';
import { dateTime, relative } from '../../format.ts';
import { DataTable } from '../../table.tsx';

type Budget = Schema<'CallBudgetState'>;
type Share = Budget['application'];

/** The figures of one API's budget as the instance view states them, in reading order. */
const ROWS: { key: keyof Omit<Share, 'pausedUntil'>; label: string; hint: string }[] = [
  { key: 'limitPerMinute', label: 'Panel limit', hint: "the panel's own limit a minute" },
  { key: 'budgetPerMinute', label: 'Our budget', hint: 'spent at most in any 62 s' },
  { key: 'usedThisMinute', label: 'Used now', hint: 'calls in the trailing 62 s' },
  { key: 'systemReserve', label: 'System reserve', hint: "the platform's own work only" },
  { key: 'readsPerMinute', label: 'Customer reads stop at', hint: 'control calls for the Client API' },
  { key: 'reservedForWrites', label: 'Kept for writes', hint: 'create, build, delete' },
  { key: 'readsPerAccountPerMinute', label: 'Reads per account', hint: 'a minute' },
  { key: 'writesPerAccountPerMinute', label: 'Writes per account', hint: 'a minute' },
  { key: 'newcomerSlice', label: 'Newcomer slice', hint: "an account's first calls of a minute" },
];

interface Figure {
  label: string;
  hint?: string;
  value: (share: Share) => ComponentChildren;
}

const FIGURES: Figure[] = ROWS.map((row) => ({ label: row.label, hint: row.hint, value: (share) => share[row.key] }));

/** A share's pause after a 429, with when it resumes. */
const PAUSED: Figure = {
  label: 'Paused after a 429',
  value: (share) =>
    share.pausedUntil && new Date(share.pausedUntil).getTime() > Date.now() ? (
      <span title={dateTime(share.pausedUntil)}>paused, resumes {relative(share.pausedUntil)}</span>
    ) : (
      'no'
    ),
};

/** The panel's shared call budget (Application and Client API side by side) and any pause. */
export function CallBudget(props: { budget: Budget; names: Map<string, string>; caption: string }) {
  const { application, client, sharedWith } = props.budget;
  const pausedNow = [application, client].some((s) => s.pausedUntil && new Date(s.pausedUntil).getTime() > Date.now());
  return (
    <details class="budget">
      <summary>
        {props.caption}: {application.usedThisMinute} of {application.budgetPerMinute} Application and {client.usedThisMinute} of{' '}
        {client.budgetPerMinute} Client calls used in the trailing minute{pausedNow ? ' (paused after a 429)' : ''}
      </summary>
      <DataTable
        label={props.caption}
        caption={props.caption}
        rows={[...FIGURES, PAUSED]}
        rowKey={(row) => row.label}
        columns={[
          {
            header: 'Calls a minute',
            rowHeader: true,
            cell: (row) =>
              row.hint ? (
                <>
                  {row.label} <span class="muted">({row.hint})</span>
                </>
              ) : (
                row.label
              ),
          },
          { header: 'Application API', class: 'num', cell: (row) => row.value(application) },
          { header: 'Client API', class: 'num', cell: (row) => row.value(client) },
        ]}
      />
      {sharedWith.length > 0 ? (
        <p class="muted">Shared with {sharedWith.map((id) => props.names.get(id) ?? id).join(', ')} (same panel URL: one budget).</p>
      ) : null}
    </details>
  );
}
