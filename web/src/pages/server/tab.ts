import type { Schema } from '../../api.ts';

/** What each tab of the server page gets: the server as last read, and a way to read it again. */
export interface TabProps {
  server: Schema<'ServerWithLive'>;
  reload: () => Promise<void>;
}
