import type { FunctionComponent } from 'preact';
import type { PageProps } from './common';
import type { Access } from '../session';
import { Overview } from './overview';
import { Exceptions } from './exceptions';
import { Versions } from './versions';
import { Accounts, Licenses } from './accounts';
import { DeadLetters } from './dead-letters';
import { Allowlists } from './allowlists';
import { REPORTS } from './reports';
import { UsagePage } from './usage';

export interface PageDef {
  id: string;
  title: string;
  group: 'Monitor' | 'Analyse' | 'Manage';
  view: FunctionComponent<PageProps>;
  /** Left out of the navigation for a key that may not use it (the page itself still says why). */
  hiddenFor?: (access: Access) => boolean;
}

const noAccountViews = (a: Access) => a.accounts === 'forbidden';

export const PAGES: PageDef[] = [
  { id: 'overview', title: 'Overview', group: 'Monitor', view: Overview },
  { id: 'exceptions', title: 'Exceptions', group: 'Monitor', view: Exceptions },
  { id: 'dead-letters', title: 'Dead letters', group: 'Monitor', view: DeadLetters },
  ...REPORTS,
  { id: 'versions', title: 'Versions', group: 'Manage', view: Versions },
  { id: 'accounts', title: 'Accounts', group: 'Manage', view: Accounts, hiddenFor: noAccountViews },
  { id: 'licenses', title: 'Licenses', group: 'Manage', view: Licenses, hiddenFor: noAccountViews },
  { id: 'allowlists', title: 'Allowlists', group: 'Manage', view: Allowlists },
  { id: 'usage', title: 'Usage and plan', group: 'Manage', view: UsagePage },
];
