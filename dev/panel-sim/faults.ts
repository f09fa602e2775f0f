// Fault injection: rules matched against method + path of incoming requests
// (everything except the /__sim control routes). The first matching rule wins
// and is consumed; a rule with `count` expires after that many requests.

export type FaultEffect =
  /** wait `ms`, then handle the request normally */
  | { kind: 'latency'; ms: number }
  /** answer `status` with a panel-style error body (code/detail default per status) */
  | { kind: 'status'; status: number; code?: string; detail?: string }
  /** accept the request and never answer (until the client aborts or the sim closes) */
  | { kind: 'timeout' }
  /** 429 ThrottleRequestsException with Retry-After and X-RateLimit-* headers */
  | { kind: 'rate_limit'; retryAfter?: number; limit?: number }
  /** handle the request normally, then never answer: the work is done but the caller cannot know */
  | { kind: 'lost_response' }
  /**
   * A test control: the request waits, unhandled, until the test calls `faults.release()`, then is
   * handled normally; so a test decides what happens while a panel call is in flight instead of
   * racing a latency. `faults.held()` counts the requests waiting.
   */
  | { kind: 'hold' };

export interface FaultRule {
  /** HTTP method, case-insensitive; omitted or '*' matches any */
  method?: string;
  /** string: prefix of the URL pathname; RegExp: tested against the pathname */
  path: string | RegExp;
  /** apply to the next N matching requests, then expire (omitted: until cleared) */
  count?: number;
  effect: FaultEffect;
}

/** JSON form accepted by `POST /__sim/faults` (a rule or an array of rules). */
export interface FaultRuleJson {
  method?: string;
  /** pathname prefix */
  path?: string;
  /** regular expression source tested against the pathname (instead of `path`) */
  pathRegex?: string;
  count?: number;
  effect: FaultEffect;
}

export interface ActiveFault {
  id: string;
  method: string;
  path: string | RegExp;
  remaining: number | null;
  effect: FaultEffect;
  hits: number;
}

const DEFAULTS: Record<number, { code: string; detail: string }> = {
  500: { code: 'HttpException', detail: 'An unexpected error was encountered while processing this request, please try again.' },
  502: { code: 'HttpException', detail: 'Bad Gateway' },
  503: { code: 'HttpException', detail: 'Service Unavailable' },
  504: {
    code: 'DaemonConnectionException',
    detail: 'Could not establish a connection to the machine running this server. Please try again.',
  },
};

export function statusDefaults(status: number): { code: string; detail: string } {
  return DEFAULTS[status] ?? { code: 'HttpException', detail: status >= 500 ? DEFAULTS[500]!.detail : 'An error occurred.' };
}

export class FaultInjector {
  private rules: ActiveFault[] = [];
  private seq = 0;
  private waiting: Array<() => void> = [];

  /** Resolves when the test releases the held requests (a `hold` effect). */
  hold(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  held(): number {
    return this.waiting.length;
  }

  /** Lets every held request go on; answers how many there were. */
  release(): number {
    const released = this.waiting;
    this.waiting = [];
    for (const go of released) go();
    return released.length;
  }

  add(rule: FaultRule): string {
    validateEffect(rule.effect);
    if (rule.count !== undefined && (!Number.isInteger(rule.count) || rule.count < 1)) {
      throw new Error('fault count must be a positive integer');
    }
    const id = `fault-${++this.seq}`;
    this.rules.push({
      id,
      method: (rule.method ?? '*').toUpperCase(),
      path: rule.path,
      remaining: rule.count ?? null,
      effect: rule.effect,
      hits: 0,
    });
    return id;
  }

  addJson(rule: FaultRuleJson): string {
    const path = rule.pathRegex !== undefined ? new RegExp(rule.pathRegex) : rule.path;
    if (path === undefined) throw new Error('fault rule needs `path` or `pathRegex`');
    const r: FaultRule = { path, effect: rule.effect };
    if (rule.method !== undefined) r.method = rule.method;
    if (rule.count !== undefined) r.count = rule.count;
    return this.add(r);
  }

  remove(id: string): boolean {
    const before = this.rules.length;
    this.rules = this.rules.filter((r) => r.id !== id);
    return this.rules.length !== before;
  }

  clear(): void {
    this.rules = [];
  }

  list(): Array<{ id: string; method: string; path: string; regex: boolean; remaining: number | null; hits: number; effect: FaultEffect }> {
    return this.rules.map((r) => ({
      id: r.id,
      method: r.method,
      path: typeof r.path === 'string' ? r.path : r.path.source,
      regex: typeof r.path !== 'string',
      remaining: r.remaining,
      hits: r.hits,
      effect: r.effect,
    }));
  }

  /** Find, consume and return the effect for this request, if any rule matches. */
  take(method: string, pathname: string): FaultEffect | null {
    const m = method.toUpperCase();
    for (const r of this.rules) {
      if (r.method !== '*' && r.method !== m) continue;
      const matches = typeof r.path === 'string' ? pathname.startsWith(r.path) : r.path.test(pathname);
      if (!matches) continue;
      r.hits++;
      if (r.remaining !== null) {
        r.remaining--;
        if (r.remaining <= 0) this.rules = this.rules.filter((x) => x !== r);
      }
      return r.effect;
    }
    return null;
  }
}

function validateEffect(e: FaultEffect): void {
  switch (e?.kind) {
    case 'latency':
      if (typeof e.ms !== 'number' || e.ms < 0) throw new Error('latency effect needs ms >= 0');
      return;
    case 'status':
      if (!Number.isInteger(e.status) || e.status < 400 || e.status > 599) throw new Error('status effect needs a 4xx/5xx status');
      return;
    case 'timeout':
    case 'lost_response':
    case 'hold':
      return;
    case 'rate_limit':
      if (e.retryAfter !== undefined && (!Number.isInteger(e.retryAfter) || e.retryAfter < 0))
        throw new Error('retryAfter must be an integer >= 0');
      return;
    default:
      throw new Error('effect.kind must be one of latency, status, timeout, rate_limit, lost_response, hold');
  }
}
