import type { Schema } from '../../api.ts';
import { dateTime, relative } from '../../format.ts';
import { ScrollRegion } from './common.tsx';

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

/** The panel's shared call budget (Application and Client API side by side) and any pause. */
export function CallBudget(props: { budget: Budget; names: Map<string, string>; caption: string }) {
  const { application, client, sharedWith } = props.budget;
  const paused = (share: Share) =>
    share.pausedUntil && new Date(share.pausedUntil).getTime() > Date.now() ? (
      <span title={dateTime(share.pausedUntil)}>paused, resumes {relative(share.pausedUntil)}</span>
    ) : (
      'no'
    );
  const pausedNow = [application, client].some((s) => s.pausedUntil && new Date(s.pausedUntil).getTime() > Date.now());
  return (
    <details class="budget">
      <summary>
        {props.caption}: {application.usedThisMinute} of {application.budgetPerMinute} Application and {client.usedThisMinute} of{' '}
        {client.budgetPerMinute} Client calls used in the trailing minute{pausedNow ? ' (paused after a 429)' : ''}
      </summary>
      <ScrollRegion label={props.caption}>
        <table>
          <caption class="visually-hidden">{props.caption}</caption>
          <thead>
            <tr>
              <th scope="col">Calls a minute</th>
              <th scope="col" class="num">
                Application API
              </th>
              <th scope="col" class="num">
                Client API
              </th>
            </tr>
          </thead>
          <tbody>
            {ROWS.map((row) => (
              <tr key={row.key}>
                <th scope="row">
                  {row.label} <span class="muted">({row.hint})</span>
                </th>
                <td class="num">{application[row.key]}</td>
                <td class="num">{client[row.key]}</td>
              </tr>
            ))}
            <tr>
              <th scope="row">Paused after a 429</th>
              <td class="num">{paused(application)}</td>
              <td class="num">{paused(client)}</td>
            </tr>
          </tbody>
        </table>
      </ScrollRegion>
      {sharedWith.length > 0 ? (
        <p class="muted">Shared with {sharedWith.map((id) => props.names.get(id) ?? id).join(', ')} (same panel URL: one budget).</p>
      ) : null}
    </details>
  );
}
