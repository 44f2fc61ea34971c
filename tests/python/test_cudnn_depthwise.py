"""partition_for_cudnn leaves depthwise convolutions to the generated CUDA kernels unless asked
(its ``depthwise`` argument or the PassContext config ``cudnn.depthwise``)."""
import importlib.util

import pytest

import partita
from partita.transform import PassContext

pytestmark = pytest.mark.skipif(importlib.util.find_spec("partita.relax.backend.cuda.cudnn") is None,
                                reason="the cudnn backend is not built here (no CUDA toolkit / cuDNN / frontend headers)")

_CONVS = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 6, 6), dtype="float16"), w: R.Tensor((8, 8, 1, 1), dtype="float16"), d: R.Tensor((8, 1, 3, 3), dtype="float16")) -> R.Tensor((1, 8, 6, 6), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((1, 8, 6, 6), dtype="float16") = R.nn.conv2d(x, w)
            gv: R.Tensor((1, 8, 6, 6), dtype="float16") = R.nn.conv2d(lv, d, padding=[1, 1, 1, 1], groups=8)
            R.output(gv)
        return gv
'''


def test_depthwise_stays_unless_asked():
    from partita.relax.backend.cuda.cudnn import partition_for_cudnn

    mod = partita.script.from_source(_CONVS)
    default = partition_for_cudnn(mod, merge=False).script()
    assert default.count('"Composite": "cudnn.conv2d"') == 1  # the 1x1 convolution only
    asked = partition_for_cudnn(mod, merge=False, depthwise=True).script()
    assert asked.count('"Composite": "cudnn.conv2d"') == 2
    with PassContext(config={"cudnn.depthwise": 1}):
        assert partition_for_cudnn(mod, merge=False).script().count('"Composite": "cudnn.conv2d"') == 2
        assert PassContext.current().config["cudnn.depthwise"] == 1
    assert "cudnn.depthwise" not in PassContext.current().config
