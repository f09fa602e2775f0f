import type { z } from 'zod';
import type { BudgetUpdate } from '../api/schemas.ts';
import { keys } from '../db/keys.ts';
import { writeItem } from '../db/write.ts';
import { type BudgetView, getBudget } from './index.ts';

/**
 * Sets the monthly budget (PUT /v1/account/budget). A raised or cleared cap lifts a budget
 * suspension at once (suspension re-reads the budget and the balance, so a lowered cap changes
 * nothing until the next pass). The suspension module is imported on use: it imports the budgets
 * for the budget, and loading it here statically would make the two folders import each other
 * (tests/unit/architecture.test.ts). Apart from index.ts, which deploys and upsizes read, so that
 * only the account function carries the suspension module (a lazy chunk) and what its start needs.
 */
export async function setBudget(accountId: string, input: z.infer<typeof BudgetUpdate>): Promise<BudgetView> {
  await writeItem({
    Update: {
      Key: keys.account(accountId),
      UpdateExpression: 'SET budgetCapCents = :cap, budgetAction = :action',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':cap': input.monthlyCapCents, ':action': input.action },
    },
  });
  const { unsuspendAfterCredit } = await import('../servers/suspension.ts');
  await unsuspendAfterCredit(accountId, 'budget');
  return getBudget(accountId);
}
