import { describe, expect, it } from 'vitest';
import { runwayHours } from '../../web/src/format.ts';

describe('runway in days and hours', () => {
  it('reads days and hours, whole hours rounded down', () => {
    expect(runwayHours(1291.4)).toBe('53 d 19 h');
    expect(runwayHours(48)).toBe('2 d 0 h');
    expect(runwayHours(23.99)).toBe('23 h');
    expect(runwayHours(0.5)).toBe('0 h');
    expect(runwayHours(-3)).toBe('0 h');
  });
});
