import { callBudgetModelCases } from '../helpers/call-budget-model.ts';

/**
 * The call budget's window against a model of the panel's limiter (tests/helpers/call-budget-model.ts),
 * sampled for `npm run check`: one seeded run of each attack at each limit, and the newcomer slice at
 * the low limits, where the shares' rounding and the per-account floor bite, plus a spread up to 720.
 * tests/reliability/call-budget-model.test.ts runs the same cases at every limit from 40 to 720 (a
 * minute and more under load, too long for this layer).
 */
callBudgetModelCases({
  runsPerStrategy: 4,
  sustainedLimits: [60],
  newcomerLimits: [...Array.from({ length: 25 }, (_, i) => 40 + i), 90, 120, 240, 360, 480, 600, 719, 720],
  newcomerRuns: 2,
});
