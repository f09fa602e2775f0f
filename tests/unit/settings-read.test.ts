import { describe, expect, it } from 'vitest';
import { Settings } from '../../shared/api/schemas/settings.ts';
import { DEFAULT_SETTINGS, withDefaults } from '../../shared/settings/index.ts';

/**
 * Reading the settings loads no schema (every function reads them at cold start): the stored
 * value, checked when it was saved, is laid over the defaults, and only known settings are kept.
 */
describe('settings as read', () => {
  it('nothing stored: the defaults, which the schema accepts', () => {
    expect(withDefaults(undefined)).toEqual(DEFAULT_SETTINGS);
    expect(Settings.safeParse(DEFAULT_SETTINGS).success).toBe(true);
  });

  it('a partial store keeps the other defaults, nested ones too', () => {
    const read = withDefaults({ prices: { ramMillicentsPerGbHour: 999 } as never, trialCreditCents: 7 });
    expect(read.prices).toEqual({ ...DEFAULT_SETTINGS.prices, ramMillicentsPerGbHour: 999 });
    expect(read.trialCreditCents).toBe(7);
    expect(read.serverCaps).toEqual(DEFAULT_SETTINGS.serverCaps);
    expect(Settings.safeParse(read).success).toBe(true);
  });

  it('a setting this code no longer knows is dropped, as the schema would strip it', () => {
    const read = withDefaults({ retiredSetting: 5 } as never) as Record<string, unknown>;
    expect(read).not.toHaveProperty('retiredSetting');
    expect(Object.keys(read).sort()).toEqual(Object.keys(Settings.shape).sort());
  });
});
