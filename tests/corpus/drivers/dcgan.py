"""carpedm20/DCGAN-tensorflow's DCGAN (model.py, with ops.py and utils.py) built for 32x32
colour images and trained a few seeded steps on the CPU, as DCGAN.train steps it: the
discriminator's and the generator's Adam steps in turn, on tiny random JPEGs read through
utils.get_image (scipy.misc.imread and imresize: SciPy before 1.3, with Pillow). The losses
must be finite, the discriminator's must fall and the samples have the promised shape. Run
from the repository's root under its environment's Python (3.7, TensorFlow 1.x)."""
from __future__ import print_function

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
from PIL import Image

sys.path.insert(0, os.getcwd())
from model import DCGAN
from utils import get_image

SIZE, BATCH, STEPS = 32, 4, 6

np.random.seed(0)
tf.set_random_seed(0)
data = tempfile.mkdtemp()
os.mkdir(os.path.join(data, "random"))
for n in range(BATCH):
    pixels = np.random.randint(0, 256, (SIZE, SIZE, 3)).astype(np.uint8)
    Image.fromarray(pixels).save(os.path.join(data, "random", "%d.jpg" % n))

config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
with tf.Session(config=config) as sess:
    dcgan = DCGAN(sess, input_height=SIZE, input_width=SIZE, output_height=SIZE,
                  output_width=SIZE, batch_size=BATCH, sample_num=BATCH, z_dim=16,
                  gf_dim=8, df_dim=8, gfc_dim=32, dfc_dim=32, dataset_name="random",
                  data_dir=data, checkpoint_dir=data, sample_dir=data)
    d_optim = tf.train.AdamOptimizer(2e-4, beta1=0.5).minimize(dcgan.d_loss,
                                                               var_list=dcgan.d_vars)
    g_optim = tf.train.AdamOptimizer(2e-4, beta1=0.5).minimize(dcgan.g_loss,
                                                               var_list=dcgan.g_vars)
    tf.global_variables_initializer().run()
    images = np.array([get_image(f, input_height=SIZE, input_width=SIZE, resize_height=SIZE,
                                 resize_width=SIZE, crop=True) for f in dcgan.data],
                      dtype=np.float32)
    z = np.random.uniform(-1, 1, (BATCH, 16)).astype(np.float32)
    d_losses, g_losses = [], []
    for _ in range(STEPS):
        sess.run(d_optim, feed_dict={dcgan.inputs: images, dcgan.z: z})
        sess.run(g_optim, feed_dict={dcgan.z: z})
        d_loss, g_loss = sess.run([dcgan.d_loss, dcgan.g_loss],
                                  feed_dict={dcgan.inputs: images, dcgan.z: z})
        d_losses.append(float(d_loss))
        g_losses.append(float(g_loss))
    samples = sess.run(dcgan.sampler, feed_dict={dcgan.z: z})

losses = d_losses + g_losses
assert all(x == x and abs(x) != float("inf") for x in losses), losses
assert d_losses[-1] < d_losses[0], d_losses
assert samples.shape == (BATCH, SIZE, SIZE, 3), samples.shape
print("ok loss=%.4f (discriminator, from %.4f, %d steps) generator=%.4f samples=%s" % (
    d_losses[-1], d_losses[0], STEPS, g_losses[-1], samples.shape))
