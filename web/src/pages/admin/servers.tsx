import { Page } from '../../ui.tsx';

/** Placeholder until this page is built. */
export default function Placeholder() {
  return (
    <Page title="admin/servers">
      <p>This page is not built yet.</p>
    </Page>
  );
}
