import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app';
import './styles.css';

// When the bundle has run (imports evaluated): `npm run bench:console` splits a page load at this mark.
performance.mark('gpunet:boot');

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
