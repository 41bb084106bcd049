(function (src, opts) { return src; })
