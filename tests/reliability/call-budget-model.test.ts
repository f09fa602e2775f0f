import { callBudgetModelCases } from '../helpers/call-budget-model.ts';

/**
 * The call budget's window against a model of the panel's limiter (tests/helpers/call-budget-model.ts),
 * in full: sixteen seeded runs of each attack, the sustained rate at three limits, and the newcomer
 * slice at every limit an operator may configure (40 to 720 a minute). The unit layer runs a sample.
 */
callBudgetModelCases({
  runsPerStrategy: 16,
  sustainedLimits: [60, 240, 720],
  newcomerLimits: Array.from({ length: 720 - 40 + 1 }, (_, i) => 40 + i),
  newcomerRuns: 4,
});
