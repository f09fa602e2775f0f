import type { JSX } from 'preact';
import { navigate, useLocation } from '../../router.ts';
import { Field } from '../../form.tsx';

/** One way to order a list's rows: its label and how two rows compare. */
export interface SortOrder<T> {
  value: string;
  label: string;
  compare: (a: T, b: T) => number;
}

/**
 * The admin lists' sort (`?sort=` in the address, so it links and survives back). The API lists
 * newest first: its sharded indexes are ordered by creation, and any other order over every row
 * would read them all. So the order applies to the page shown, and the caption says so.
 */
export function useSort<T>(orders: SortOrder<T>[]): { order: SortOrder<T>; sort: (rows: T[]) => T[]; control: JSX.Element } {
  const { path, query } = useLocation();
  const order = orders.find((o) => o.value === query.get('sort')) ?? orders[0]!;
  const control = (
    <Field id={`${path.replace(/\W+/g, '-')}-sort`} label="Sort this page by">
      {(props) => (
        <select
          {...props}
          name="sort"
          data-testid="sort"
          value={order.value}
          onChange={(e) => {
            const next = new URLSearchParams(location.search);
            const value = e.currentTarget.value;
            if (value === orders[0]!.value) next.delete('sort');
            else next.set('sort', value);
            navigate(`${path}${next.size ? `?${next}` : ''}`);
          }}
        >
          {orders.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
  return { order, sort: (rows) => (order === orders[0] ? rows : [...rows].sort(order.compare)), control };
}

export const byText = (a: string, b: string) => a.localeCompare(b);
