import { describe, expect, it } from 'vitest';
import { routerForGroups } from '../../shared/http/router.ts';
import { GROUPS, routeEntries, toTemplatePath } from '../../shared/api/routes.ts';
import type { ApiError } from '../../shared/errors.ts';

const match = routerForGroups(GROUPS);

describe('router over the route table', () => {
  it('matches every route of the table by its own path', () => {
    for (const [id, def] of routeEntries()) {
      const concrete = def.path.replace(/:([A-Za-z]+)/g, 'x1');
      expect(match(def.method, concrete).id).toBe(id);
    }
  });

  it('captures and decodes parameters; a trailing slash is another path, as on API Gateway', () => {
    const m = match('DELETE', '/v1/keys/abc%20def');
    expect(m.id).toBe('revokeKey');
    expect(m.params).toEqual({ id: 'abc def' });
    const slashed = (() => {
      try {
        match('DELETE', '/v1/keys/abc%20def/');
      } catch (e) {
        return e as ApiError;
      }
    })();
    expect(slashed?.code).toBe('not_found');
  });

  it('tells 405 (with Allow) from 404', () => {
    const wrong = (() => {
      try {
        match('POST', '/v1/account');
      } catch (e) {
        return e as ApiError;
      }
    })();
    expect(wrong?.code).toBe('method_not_allowed');
    expect(wrong?.headers.Allow).toBe('GET');
    expect(() => match('GET', '/v1/keys/a/b')).toThrow(/No route/);
  });

  it('has no two routes with the same method and path', () => {
    const seen = new Set(routeEntries().map(([, d]) => `${d.method} ${toTemplatePath(d.path)}`));
    expect(seen.size).toBe(routeEntries().length);
  });

  it('gives every mutation an activity-log action and every bearer route a scope', () => {
    for (const [id, def] of routeEntries()) {
      if (def.group === 'dev') continue;
      // Authenticated mutations are logged by the pipeline; the webhook logs what it did itself.
      if (def.method !== 'GET' && def.auth === 'bearer') expect(def.audit, id).toBeTruthy();
      if (def.auth === 'bearer') expect(def.scope, id).toBeTruthy();
      if (def.group === 'admin') expect(def.admin && def.scope === 'admin', id).toBe(true);
    }
  });
});
