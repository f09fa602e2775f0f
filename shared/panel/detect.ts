import { PanelRequestError } from './errors.ts';
import type { PanelClient } from './client.ts';
import type { PanelKind } from './types.ts';

/**
 * Which panel software answers, from routes only one of them has: Pterodactyl lists nests
 * (`GET /api/application/nests`, pterodactyl/panel routes/api-application.php), which Pelican
 * dropped for `GET /api/application/eggs` (pelican-dev/panel routes/api-application.php). The
 * kind known so far is asked first (one read when it holds); with none, Pelican's route, so a
 * Pelican panel is never asked for a route it has not got, and a Pterodactyl panel answers that
 * one 404, then nests (two reads). Neither: not a panel we drive.
 */
export async function detectPanelKind(client: PanelClient, known?: PanelKind): Promise<PanelKind> {
  const answers = async (path: string) => (await client.orNull(() => client.app('GET', path, { query: { per_page: 1 } }))) !== null;
  const order: [string, PanelKind][] = [
    ['/eggs', 'pelican'],
    ['/nests', 'pterodactyl'],
  ];
  if (known === 'pterodactyl') order.reverse();
  for (const [path, kind] of order) if (await answers(path)) return kind;
  throw new PanelRequestError(
    'panel_error',
    'The panel answers neither /api/application/nests (Pterodactyl) nor /api/application/eggs (Pelican)',
    404,
  );
}
