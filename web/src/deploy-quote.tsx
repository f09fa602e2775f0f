import type { ComponentChildren } from 'preact';
import { ControlPlaneError, type Schema } from './api.ts';
import { cents, millicents } from './format.ts';
import { RegionName } from './regions.tsx';
import { href } from './router.ts';
import { Badge, ErrorNotice, type Tone } from './ui.tsx';

/**
 * What the deploy page says about a body: the live quote (POST /v1/servers/quote) — price, where it
 * would run or why it cannot, what credit it needs — and a refused deploy's details. Every amount
 * is the API's; nothing is priced here.
 */
type Quote = Schema<'Quote'>;
type Rejection = Quote['placement']['rejected'][number];

export type QuoteStatus = 'waiting' | 'updating' | 'ready' | 'error';
const TONE: Record<QuoteStatus, Tone> = { waiting: 'neutral', updating: 'neutral', ready: 'ok', error: 'bad' };

const REASONS: Record<Rejection['reason'], string> = {
  other_instance: 'on another panel than the egg’s',
  instance_disabled: 'its panel is disabled',
  region_mismatch: 'in another region',
  not_public: 'the node is not public',
  maintenance: 'the node is in maintenance',
  insufficient_memory: 'not enough free memory',
  insufficient_disk: 'not enough free disk',
  insufficient_cpu: 'not enough free CPU',
  no_free_allocation: 'no free port',
};

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
/** How each line of the itemised price reads. */
const LINE_NAMES: Record<Quote['lines'][number]['item'], (quantity: number) => string> = {
  resources: () => 'Resources',
  backups: (n) => plural(n, 'extra backup slot', 'extra backup slots'),
  databases: (n) => plural(n, 'extra database', 'extra databases'),
  ports: (n) => plural(n, 'extra port', 'extra ports'),
};

/** The nodes that could not take the server, and why (from a quote or a `no_capacity` error). */
function Rejections(props: { rejected: { nodeName: string; region: string | null; reason: Rejection['reason'] }[] }) {
  if (props.rejected.length === 0) return <p>No node is available for this egg.</p>;
  return (
    <ul class="rejections" data-testid="quote-rejections">
      {props.rejected.map((r) => (
        <li key={`${r.nodeName}-${r.reason}`}>
          <strong>{r.nodeName}</strong>
          {r.region ? (
            <>
              {' ('}
              <RegionName tag={r.region} />)
            </>
          ) : (
            ''
          )}
          : {REASONS[r.reason] ?? r.reason}
        </li>
      ))}
    </ul>
  );
}

/** A warning in the quote: not an alert (the quote's status line announces each new quote). */
function Warning(props: { children: ComponentChildren; testid?: string }) {
  return (
    <div class="notice warning" data-testid={props.testid}>
      <p>{props.children}</p>
    </div>
  );
}

function TopUp(props: { children: ComponentChildren }) {
  return (
    <Warning testid="quote-credit">
      {props.children} <a href={href('/billing')}>Top up</a>
    </Warning>
  );
}

/** The live quote: status, price, placement, and what stands in the way of a deploy. */
export function QuotePanel(props: {
  status: QuoteStatus;
  quote: Quote | undefined;
  error: unknown;
  instanceName: (id: string) => string;
  /** What the form still lacks that the quote cannot see (the name: the quote prices a placeholder). */
  missing?: string | null;
}) {
  const { quote, status } = props;
  const words: Record<QuoteStatus, string> = {
    waiting: 'Choose a game to see the price.',
    updating: 'Updating the price…',
    ready: quote && !quote.deployable ? 'Price for the choices above; it cannot be deployed as it is:' : 'Price for the choices above:',
    error: 'The price could not be computed:',
  };
  return (
    <>
      <p role="status" class="quote-status">
        <Badge tone={TONE[status]}>
          <span data-testid="quote-status">{status}</span>
        </Badge>{' '}
        {status === 'updating' ? <span class="spin" aria-hidden="true" /> : null} {words[status]}
      </p>
      {status === 'error' ? <ErrorNotice error={props.error} /> : null}
      {quote && status !== 'error' ? (
        <div class={status === 'updating' ? 'quote stale' : 'quote'}>
          <dl class="props">
            <dt>Per hour</dt>
            <dd>
              <strong class="quote-price" data-testid="quote-hourly">
                {millicents(quote.priceMillicentsPerHour)}
              </strong>{' '}
              {/* The exact price is what is charged; the server list shows it rounded up to the cent. */}
              <span class="muted" data-testid="quote-hourly-rounded">
                (shown as {cents(quote.priceCentsPerHour)}/h on the server)
              </span>
            </dd>
            {quote.lines.length > 1 ? (
              <>
                <dt>Made of</dt>
                <dd>
                  <ul class="quote-lines" data-testid="quote-lines">
                    {quote.lines.map((line) => (
                      <li key={line.item}>
                        {LINE_NAMES[line.item](line.quantity)}: {millicents(line.millicentsPerHour)}
                      </li>
                    ))}
                  </ul>
                </dd>
              </>
            ) : null}
            <dt>Per month</dt>
            <dd>
              <span data-testid="quote-monthly">{cents(quote.monthly.estimateCents)}</span>{' '}
              <span class="muted">
                ({quote.monthly.hours} h × the exact price, rounded once
                {quote.monthly.capHours !== null && quote.monthly.hours < 730 ? '; the monthly cap' : ''})
              </span>
            </dd>
            <dt>Runs in</dt>
            <dd data-testid="quote-placement">
              {quote.placement.instanceId ? (
                <>
                  {quote.placement.region ? <RegionName tag={quote.placement.region} /> : 'any region'} ·{' '}
                  {props.instanceName(quote.placement.instanceId)}
                </>
              ) : (
                'no node can take it now'
              )}
            </dd>
          </dl>
          {quote.deployable && props.missing ? (
            <p data-testid="quote-missing">{props.missing}</p>
          ) : quote.deployable ? (
            <p class="quote-ok" data-testid="quote-deployable">
              Ready to deploy. Billed by the hour from now; delete it any time.
            </p>
          ) : null}
          {!quote.placement.instanceId ? (
            <div class="notice warning" data-testid="quote-no-capacity">
              <p>
                <strong>No capacity:</strong> no node can take this server now. Try another region or smaller resources.
              </p>
              <Rejections rejected={quote.placement.rejected} />
            </div>
          ) : null}
          {quote.placement.unansweredInstances.length > 0 ? (
            <Warning>
              Some panels did not answer ({quote.placement.unansweredInstances.map(props.instanceName).join(', ')}); their nodes were not
              considered.
            </Warning>
          ) : null}
          {!quote.runway.passes ? (
            <TopUp>
              <strong>Not enough credit:</strong> a deploy needs {cents(quote.runway.requiredCents)} (24 hours of all your servers with this
              one); your balance is {cents(quote.runway.balanceCents)}. Add at least{' '}
              <span data-testid="quote-shortfall">{cents(quote.runway.shortfallCents)}</span>.
            </TopUp>
          ) : null}
          {!quote.budget.passes ? (
            <Warning testid="quote-budget">
              <strong>Over budget:</strong> {quote.budget.message} <a href={href('/billing')}>Change the budget</a>
            </Warning>
          ) : null}
        </div>
      ) : null}
    </>
  );
}

/** What a refused deploy needs besides its message: the top-up, or the nodes and their reasons. */
export function DeployProblem(props: { error: unknown }) {
  const e = props.error;
  if (!(e instanceof ControlPlaneError)) return null;
  if (e.is('insufficient_credit') && e.details) {
    return (
      <TopUp>
        {e.details.requiredCents !== undefined
          ? `A deploy needs ${cents(e.details.requiredCents)} in credit; your balance is ${cents(e.details.balanceCents)}.`
          : `Your balance is ${cents(e.details.balanceCents)}.`}
      </TopUp>
    );
  }
  if (e.is('no_capacity') && e.details) return <Rejections rejected={e.details.candidates} />;
  return null;
}
