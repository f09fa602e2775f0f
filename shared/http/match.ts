import type { RouteDef } from '../api/route-def.ts';
import type { RouteId } from '../api/routes.ts';
import { ApiError } from '../errors.ts';

/**
 * A route table compiled into a matcher: static segments compared, `:name` segments captured.
 * It takes whatever table it is given: a function its own group's routes (shared/http/handler.ts),
 * the local API and the fallback for paths outside a group the whole table (./router.ts).
 */
export interface MatchedRoute {
  id: RouteId;
  def: RouteDef;
  params: Record<string, string>;
}

export type Matcher = (method: string, path: string) => MatchedRoute;

interface Compiled {
  id: RouteId;
  def: RouteDef;
  segments: string[];
}

export function compileTable(table: Readonly<Record<string, RouteDef>>): Matcher {
  const compiled: Compiled[] = Object.entries(table).map(([id, def]) => ({
    id: id as RouteId,
    def,
    segments: def.path.split('/').slice(1),
  }));
  // Static routes win over parameterised ones (`/v1/servers/x/files` before `/v1/servers/:id`).
  compiled.sort((a, b) => staticWeight(b) - staticWeight(a));

  // Paths match exactly, as API Gateway's HTTP API routes do: case-sensitive, no trailing-slash
  // or double-slash normalisation (`/v1/account/` and `/v1//account` are not `/v1/account`), so
  // the local stack and every Lambda answer such a path like AWS's `$default` route: 404.
  return function match(method: string, path: string): MatchedRoute {
    const parts = path.split('/').slice(1);
    const allowed: string[] = [];
    for (const route of compiled) {
      const params = matchSegments(route.segments, parts.length ? parts : ['']);
      if (!params) continue;
      if (route.def.method === method) return { id: route.id, def: route.def, params };
      allowed.push(route.def.method);
    }
    if (allowed.length) {
      throw new ApiError(
        'method_not_allowed',
        `Method ${method} is not allowed on ${path}`,
        { allowed },
        { Allow: [...new Set(allowed)].join(', ') },
      );
    }
    throw new ApiError('not_found', `No route for ${method} ${path}`);
  };
}

const staticWeight = (r: Compiled): number => r.segments.filter((s) => !s.startsWith(':')).length;

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const v = parts[i]!;
    if (p.startsWith(':')) {
      if (!v) return undefined;
      try {
        params[p.slice(1)] = decodeURIComponent(v);
      } catch {
        return undefined;
      }
    } else if (p !== v) return undefined;
  }
  return params;
}
