import type { Metadata } from 'next';
import Link from 'next/link';
import type { ReactNode } from 'react';
import { signOut } from './signin/actions';
import './globals.css';

export const metadata: Metadata = { title: 'Agent control plane' };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <header>
          <Link href="/conversations">Conversations</Link>
          <Link href="/sandboxes">Sandboxes</Link>
          <Link href="/settings">Settings</Link>
          <Link href="/git-providers">Git providers</Link>
          <Link href="/secrets">Secrets</Link>
          <form action={signOut}>
            <button type="submit">Sign out</button>
          </form>
        </header>
        <main>{children}</main>
      </body>
    </html>
  );
}
