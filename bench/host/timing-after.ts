// The probe after the extension under test (see timing.ts).
import { probe } from "./timing.ts";
export default probe("after");
