import { api, ok } from '../../api.ts';
import { usePaged } from '../../paged.tsx';
import { Ago, PagedTable } from '../../table.tsx';
import { Button } from '../../ui.tsx';

/** The account's latest events (every event is recorded, whether or not an endpoint takes it). */
export function RecentEvents() {
  const events = usePaged((cursor) => ok(api().GET('/v1/events', { params: { query: { limit: 10, cursor } } })));
  return (
    <section aria-labelledby="events-title">
      <div class="page-head">
        <h2 id="events-title">Recent events</h2>
        <Button busy={events.loading} onClick={() => void events.reload()}>
          Refresh events
        </Button>
      </div>
      <PagedTable
        list={events}
        what="events"
        empty={<p>No events in the last 30 days.</p>}
        moreLabel="Show more events"
        label="Recent events table"
        caption="Recent events, newest first"
        rowKey={(e) => e.id}
        rowProps={() => ({ 'data-testid': 'event-row' })}
        columns={[
          { header: 'Type', rowHeader: true, class: 'row-head', cell: (e) => <code>{e.type}</code> },
          { header: 'When', cell: (e) => <Ago at={e.createdAt} /> },
          { header: 'Event id', cell: (e) => <code>{e.id}</code> },
        ]}
      />
    </section>
  );
}
