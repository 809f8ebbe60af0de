// Globals the pages set for debugging in the console and for the browser tests.
interface Window {
  planboard?: unknown;
}
