import { render } from 'preact';
import { useState } from 'preact/hooks';
import './style.css';
import { storedKey, storeKey } from './api';
import { useQuery } from './data';
import { href, useRoute } from './route';
import { probe, type Access } from './session';
import { ErrorState, Loading } from './ui';
import { SignIn } from './pages/sign-in';
import { PAGES } from './pages/index';

function Shell({ access, signOut }: { access: Access; signOut: () => void }) {
  const route = useRoute();
  const current = PAGES.find((p) => p.id === route.page) ?? PAGES[0]!;
  const Page = current.view;
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <nav aria-label="Console">
        <div class="brand">Tally</div>
        {['Monitor', 'Analyse', 'Manage'].map((group) => (
          <div key={group}>
            <div class="nav-group">{group}</div>
            <ul>
              {PAGES.filter((p) => p.group === group && !p.hiddenFor?.(access)).map((p) => (
                <li key={p.id}>
                  <a href={href(p.id)} aria-current={p.id === current.id ? 'page' : undefined}>
                    {p.title}
                  </a>
                </li>
              ))}
            </ul>
          </div>
        ))}
        <button type="button" class="link" onClick={signOut}>
          Sign out
        </button>
      </nav>
      <main id="main" tabIndex={-1}>
        <h1>{current.title}</h1>
        <Page access={access} params={route.params} />
      </main>
    </div>
  );
}

function App() {
  const [key, setKey] = useState(storedKey());
  const access = useQuery<Access>(key, () => probe(key!));
  const signOut = () => {
    storeKey(null);
    setKey(null);
  };
  if (!key) return <SignIn onKey={(k) => (storeKey(k), setKey(k))} />;
  if (access.state === 'loading') return <Loading what="your key's permissions" />;
  if (access.state === 'error') {
    if (access.error.status === 401) return <SignIn onKey={(k) => (storeKey(k), setKey(k))} error="That key was refused (401). Check it and try again." />;
    return <ErrorState error={access.error} retry={access.reload} />;
  }
  return <Shell access={access.data} signOut={signOut} />;
}

render(<App />, document.getElementById('app')!);
