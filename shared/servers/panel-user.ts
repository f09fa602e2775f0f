/**
 * The panel user of an account, the same on every panel and known without a panel call: servers
 * go under it on a panel without a client key (shared/servers/deploy.ts), and it is the account's
 * SFTP login, a subuser of the account's servers, on a panel with one (shared/servers/sftp.ts).
 * Account ids are random v4, so their first 16 hex digits tell accounts apart.
 */
export function panelUserOf(accountId: string) {
  const short = accountId.replace(/-/g, '').slice(0, 16);
  return {
    externalId: `cp-account-${accountId}`,
    username: `cp${short}`,
    // Not the customer's address: the panel would mail them a password reset for a panel they never use.
    email: `account-${short}@users.control-plane.invalid`,
    first_name: 'Control plane',
    last_name: `account ${short}`,
  };
}
