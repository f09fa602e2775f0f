import type { ComponentChildren } from 'preact';
import { api, ok, type Schema } from '../../api.ts';
import { cents, dateTime } from '../../format.ts';
import { href } from '../../router.ts';
import { type Columns, DataTable } from '../../table.tsx';
import { Badge, Button, Loading, Page, useLoad } from '../../ui.tsx';

type Home = Schema<'AdminHome'>;
type Money = Home['money']['today'];
type Panel = Home['panels'][number];

/** A figure as a card; with `to`, the card's value links to the list it counts. */
function Figure(props: { label: string; to?: string; testid: string; children: ComponentChildren; partial?: boolean }) {
  const value = props.partial ? <>at least {props.children}</> : props.children;
  return (
    <div class="stat">
      <dt>{props.label}</dt>
      <dd data-testid={props.testid}>{props.to ? <a href={href(props.to)}>{value}</a> : value}</dd>
    </div>
  );
}

function MoneyCards(props: { period: string; money: Money; testid: string }) {
  const { money } = props;
  return (
    <>
      <Figure label={`Top-ups ${props.period}`} testid={`${props.testid}-topups`}>
        {cents(money.topUpCents)} <span class="muted">({money.topUps})</span>
      </Figure>
      <Figure label={`Refunded ${props.period}`} testid={`${props.testid}-returned`}>
        {cents(money.returnedCents)}
      </Figure>
      <Figure label={`Revenue ${props.period}`} testid={`${props.testid}-revenue`}>
        {cents(money.revenueCents)}
      </Figure>
    </>
  );
}

const HEALTH_TONE = { ok: 'ok', failing: 'bad', untested: 'warn' } as const;
const used = (b: { usedThisMinute: number; budgetPerMinute: number }) => `${b.usedThisMinute} of ${b.budgetPerMinute}`;

const PANEL_COLUMNS: Columns<Panel> = [
  { header: 'Panel', rowHeader: true, cell: (p) => p.name },
  {
    header: 'Health',
    cell: (p) => (
      <>
        <Badge tone={HEALTH_TONE[p.health]}>{p.enabled ? p.health : `${p.health}, disabled`}</Badge>
        {p.lastTestAt ? <span class="muted"> tested {dateTime(p.lastTestAt)}</span> : null}
      </>
    ),
  },
  { header: 'Servers', class: 'num', cell: (p) => p.serverCount },
  { header: 'Application calls this minute', class: 'num', cell: (p) => used(p.callBudget.application) },
  { header: 'Client calls this minute', class: 'num', cell: (p) => used(p.callBudget.client) },
];

/**
 * The admin's home (GET /v1/admin/home): the platform's figures as cards, each linked to the list it
 * counts (money is booked with the ledger; revenue is top-ups less the card money refunds and lost
 * disputes gave back, before tax), and the panels with their health and call budget.
 */
export default function AdminHome() {
  const home = useLoad(() => ok(api().GET('/v1/admin/home')));
  return (
    <Page
      title="Admin home"
      actions={
        <Button onClick={() => void home.reload()} busy={home.loading}>
          Refresh
        </Button>
      }
    >
      <Loading state={home} label="Reading the platform's figures…">
        {(h) => (
          <>
            <p class="muted">Figures as of {dateTime(h.at)}; days and months are UTC.</p>
            <h2>Money</h2>
            <dl class="cards" data-testid="home-money">
              <MoneyCards period="today" money={h.money.today} testid="today" />
              <MoneyCards period="this month" money={h.money.month} testid="month" />
            </dl>
            <h2>Platform</h2>
            <dl class="cards">
              <Figure label="Active servers" to="/admin/servers?status=active" testid="home-active" partial={!h.servers.complete}>
                {h.servers.active}
              </Figure>
              <Figure label="Suspended servers" to="/admin/servers?status=suspended" testid="home-suspended" partial={!h.servers.complete}>
                {h.servers.suspended}
              </Figure>
              <Figure label="Accounts" to="/admin/accounts" testid="home-accounts" partial={!h.accounts.complete}>
                {h.accounts.count}
              </Figure>
              <Figure label="Panels" to="/admin/instances" testid="home-panels">
                {h.panels.length}
              </Figure>
              <Figure label="Pending repairs" testid="home-repairs" partial={!h.pendingRepairs.complete}>
                {h.pendingRepairs.count}
              </Figure>
              <Figure label="Webhook events to dispatch" testid="home-undispatched" partial={!h.webhookBacklog.complete}>
                {h.webhookBacklog.undispatched}
              </Figure>
              <Figure label="Webhook deliveries due" testid="home-deliveries" partial={!h.webhookBacklog.complete}>
                {h.webhookBacklog.deliveriesDue}
              </Figure>
            </dl>
            <h2>Panels</h2>
            <DataTable
              label="Panels table"
              caption="Panels with their health and call budget"
              rows={h.panels}
              rowKey={(p) => p.id}
              columns={PANEL_COLUMNS}
              empty={
                <p>
                  No panel registered yet. <a href={href('/admin/instances')}>Register one</a>.
                </p>
              }
            />
          </>
        )}
      </Loading>
    </Page>
  );
}
