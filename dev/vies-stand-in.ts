import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { listen } from './local-api.ts';

/**
 * The local stand-in for VIES, the EU's VAT number register (shared/accounts/vies.ts calls it):
 * `POST /check-vat-number` answers as the real REST API does, from a fixture of fictional VAT ids
 * (dev/vies-fixture.json), with nothing outside this machine called. The local stack and the tests
 * start it and point VIES_API_URL at it (LOCAL_VIES=off keeps the real service).
 */
interface Fixture {
  registered: Record<string, { name: string; address: string }>;
  unavailable: string[];
}

const fixture = JSON.parse(readFileSync(new URL('./vies-fixture.json', import.meta.url), 'utf8')) as Fixture;

export interface ViesStandIn {
  url: string;
  /** The VAT ids asked, in order (`DE123456789`): tests see whether a check was made. */
  asked: string[];
  close(): Promise<void>;
}

export async function startViesStandIn(): Promise<ViesStandIn> {
  const asked: string[] = [];
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/check-vat-number')
      return send(404, { actionSucceed: false, errorWrappers: [{ error: 'NOT_FOUND' }] });
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk.toString('utf8');
    });
    req.on('end', () => {
      let input: { countryCode?: unknown; vatNumber?: unknown };
      try {
        input = JSON.parse(raw) as typeof input;
      } catch {
        return send(400, { actionSucceed: false, errorWrappers: [{ error: 'INVALID_INPUT' }] });
      }
      if (typeof input.countryCode !== 'string' || typeof input.vatNumber !== 'string') {
        return send(400, { actionSucceed: false, errorWrappers: [{ error: 'INVALID_INPUT' }] });
      }
      const id = `${input.countryCode}${input.vatNumber}`;
      asked.push(id);
      if (fixture.unavailable.includes(input.countryCode)) {
        return send(500, { actionSucceed: false, errorWrappers: [{ error: 'MS_UNAVAILABLE' }] });
      }
      const entry = fixture.registered[id];
      send(200, {
        countryCode: input.countryCode,
        vatNumber: input.vatNumber,
        requestDate: new Date().toISOString(),
        valid: Boolean(entry),
        requestIdentifier: '',
        name: entry?.name ?? '---',
        address: entry?.address ?? '---',
        traderName: '',
        traderStreet: '',
        traderPostalCode: '',
        traderCity: '',
        traderCompanyType: '',
        traderNameMatch: 'NOT_PROCESSED',
        traderStreetMatch: 'NOT_PROCESSED',
        traderPostalCodeMatch: 'NOT_PROCESSED',
        traderCityMatch: 'NOT_PROCESSED',
        traderCompanyTypeMatch: 'NOT_PROCESSED',
      });
    });
  });
  const url = await listen(server, 0, '127.0.0.1');
  return {
    url,
    asked,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
