import type { TabProps } from './tab.ts';

/** Placeholder until this tab is built. */
export default function ConsoleTab(_props: TabProps) {
  return <p>This tab is not built yet.</p>;
}
