// Module resolution hooks for tests/pi-version.mjs: Pi's packages resolve from the prefix.
let base;

export function initialize(data) {
	base = data.base;
}

const redirected = (specifier) => specifier.startsWith("@earendil-works/") || specifier === "typebox" || specifier.startsWith("typebox/");

export async function resolve(specifier, context, next) {
	if (base && redirected(specifier)) return next(specifier, { ...context, parentURL: new URL("package.json", base).href });
	return next(specifier, context);
}
